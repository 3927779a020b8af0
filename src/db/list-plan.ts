import type { Filter } from 'mongodb';
import type { GramDoc } from './collections';
import { compareIds, IN_LIMIT } from './dialect';
import { fold, gramCounts, recordsWithGram, searchFilter, searchTerms, termGrams } from './search-index';
import type { Page, TenantCollection } from './tenant';

/**
 * How a filtered, searched list is read without scanning an organization (docs/lists-and-search.md):
 * a storage plan, chosen from index counts, hence here in src/db.
 *
 * A search chooses its *driver*, the smallest index range that contains every answer: the
 * records of the query's rarest trigram (`{g, org, r}`), or the list's filter itself (an
 * equality index on the record, or another candidate set such as a group's links), whichever
 * the index counts say is smaller. The driver's records are read by `_id`, a thousand at a time,
 * with the whole filter and each term's escaped literal `$regex` (case-insensitive), so the
 * database checks every candidate exactly; the cost is the driver's size.
 */

/** Counts stop here: past it a gram or a filter is "large", and its exact size does not matter. */
const CANDIDATE_CAP = 5000;

export interface SearchSource<T extends { id: number | string }, R extends number | string> {
  records: TenantCollection<T & { _id: string; org: string }>;
  grams: TenantCollection<GramDoc<R>>;
  /** The searched fields of a record, by name. */
  fields: readonly string[];
  /** The list's filter (equalities on indexed fields). */
  filter: Record<string, unknown>;
  /** Another candidate set every answer is in and that drives the search (a group's courses), with its size. */
  within?: { size: number; keys(): Promise<R[]> };
  /** True when every record having the gram passes `filter` (users: grams exist for listed users only). */
  gramsImplyFilter: boolean;
}

/**
 * The page and count of the records matching `filter` and every term of `search` (possibly
 * none, with `within`). Terms shorter than three characters have no trigram: they are checked on
 * the candidates of the other terms, or, when no term has one, on the filter's records.
 */
export async function searchList<T extends { id: number | string }, R extends number | string>(
  source: SearchSource<T, R>,
  search: string | undefined,
  page: Page,
): Promise<{ count: number; docs: T[] }> {
  const terms = searchTerms(search).map(fold);
  const check = { ...source.filter, ...searchFilter(source.fields, search) };
  const checked = async (keys: readonly (number | string)[]) =>
    (await source.records.find({ _id: { $in: keys.map(String) }, ...check } as Filter<T & { _id: string; org: string }>).toArray()) as unknown as T[];
  const gs = termGrams(terms);
  const counts = await gramCounts(source.grams, gs, CANDIDATE_CAP);
  const [rarest, rarestSize] = [...counts].reduce<[string | null, number]>((best, [g, c]) => (c < best[1] ? [g, c] : best), [null, Infinity]);
  const exactGram = rarest !== null && source.gramsImplyFilter && !source.within && terms.length === 1 && Array.from(terms[0]!).length === 3;
  // The filter's own size matters only when it could be the smaller driver: counted up to the
  // gram's. Never when every gram entry satisfies the filter (it cannot be smaller then).
  const filterSize = source.within
    ? source.within.size
    : rarestSize <= 100 || exactGram || source.gramsImplyFilter
      ? Infinity
      : await source.records.count(source.filter as Filter<T & { _id: string; org: string }>, { limit: Math.min(rarestSize, CANDIDATE_CAP) + 1 });
  // No candidate: the check still goes to the database (an `_id` `$in` of nothing reads nothing),
  // so every search sends its terms the one way, as escaped literal patterns.
  if (rarestSize === 0 || filterSize === 0) return { count: 0, docs: await checked([]) };

  // One term that is itself a trigram, on a list whose filter every gram entry satisfies: the
  // gram's entries are exactly the answer, so count and page come from the index alone.
  if (exactGram) {
    const [count, keys] = await Promise.all([
      rarestSize <= CANDIDATE_CAP ? rarestSize : source.grams.count({ g: rarest! } as Filter<GramDoc<R>>),
      recordsWithGram(source.grams, rarest!, page),
    ]);
    const docs = keys.length === 0 ? [] : await checked(keys);
    return { count, docs: docs.sort((a, b) => compareIds(a.id, b.id)) };
  }

  // A candidate set (a group's courses) is the driver whatever the grams: it is what a gram's
  // candidates could not be checked against.
  const keys = source.within
    ? await source.within.keys()
    : rarest !== null && rarestSize <= filterSize
      ? await recordsWithGram(source.grams, rarest)
      : (await source.records.find(source.filter as Filter<T & { _id: string; org: string }>, { projection: { _id: 0, id: 1 } }).toArray()).map(
          (d) => (d as unknown as { id: R }).id,
        );
  const matches: T[] = [];
  for (let i = 0; i < keys.length; i += IN_LIMIT) matches.push(...(await checked(keys.slice(i, i + IN_LIMIT))));
  matches.sort((a, b) => compareIds(a.id, b.id));
  return { count: matches.length, docs: matches.slice(page.offset, page.offset + page.limit) };
}
