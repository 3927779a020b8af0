import type { Db } from 'mongodb';
import { COLLECTIONS, type CounterDoc } from './collections';
import { isDuplicateKey } from './driver-errors';

/**
 * Claims the next `count` integer ids of a resource and returns the last of them (so the ids are
 * `last - count + 1 … last`). One atomic `$inc` on the resource's counter: ids are never handed
 * out twice, whichever process asks, and never reused, since the counter only grows.
 */
export async function claimIds(db: Db, resource: string, count = 1): Promise<number> {
  const counters = db.collection<CounterDoc>(COLLECTIONS.counters);
  const claim = () => counters.findOneAndUpdate({ _id: resource }, { $inc: { n: count } }, { upsert: true, returnDocument: 'after' });
  // Two first-ever upserts of one counter can race to insert it; the loser's retry is an update.
  const doc = await claim().catch((err: unknown) => {
    if (isDuplicateKey(err)) return claim();
    throw err;
  });
  return doc!.n;
}

/** The next integer id of a resource. */
export const nextId = (db: Db, resource: string): Promise<number> => claimIds(db, resource, 1);
