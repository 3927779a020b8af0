import type { Db } from 'mongodb';
import { isDuplicateKey } from '../http/errors';
import { COLLECTIONS } from './collections';

interface IdClaim {
  _id: string;
  resource: string;
  n: number;
}

/** Per process and database: the highest id this process knows to be taken, per resource. */
const highest = new WeakMap<Db, Map<string, number>>();

/**
 * The next integer id of a resource, never handed out twice and never reused.
 *
 * FerretDB v1 does not apply `$inc` atomically (concurrent increments are lost), so a counter
 * document cannot be trusted. An insert of a unique `_id` is atomic on every server, so each id
 * is claimed by inserting `resource:n`; a duplicate means another process took it, and we step
 * forward (doubling the step, so a far-ahead peer is caught up with in a few tries). A process
 * learns the highest claim once per resource, then counts locally.
 */
export async function nextId(db: Db, resource: string): Promise<number> {
  const claims = db.collection<IdClaim>(COLLECTIONS.counters);
  let known = highest.get(db);
  if (!known) highest.set(db, (known = new Map()));
  let last: number = known.get(resource) ?? -1;
  if (last < 0) {
    const top = await claims.find({ resource }).sort({ n: -1 }).limit(1).project<{ n: number }>({ n: 1 }).toArray();
    last = Math.max(known.get(resource) ?? 0, top[0]?.n ?? 0);
  }
  let step = 1;
  for (;;) {
    const n: number = Math.max(last, known.get(resource) ?? 0) + step;
    known.set(resource, n);
    try {
      await claims.insertOne({ _id: `${resource}:${n}`, resource, n });
      return n;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      last = n;
      step = Math.min(step * 2, 1024);
    }
  }
}
