import { NotFound } from '../errors';

/** A path's integer id; anything else cannot name a record, so it is a 404 as in DRF. */
export function intId(raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,15}$/.test(raw)) throw new NotFound();
  const id = Number(raw);
  if (!Number.isSafeInteger(id)) throw new NotFound();
  return id;
}
