/** One page of a list: `limit` records after the first `offset` (the API's `limit` and `offset`). */
export interface Page {
  limit: number;
  offset: number;
}
