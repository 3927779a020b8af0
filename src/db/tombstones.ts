import type { Db, Filter } from 'mongodb';
import { COLLECTIONS, type EventVersion, type TombstoneDoc } from './collections';
import { readInPieces } from './dialect';
import { isDuplicateKey } from './driver-errors';
import { recordAtVersion } from './versioned-writes';

/**
 * Tombstones, read and written by `_id` alone. Like the owner lookup (tenant.ts), they answer a
 * question asked before an organization is known, or whatever organization an event names: "was
 * this user or course deleted, and by which event?". They hold no tenant data but the
 * organization a record was deleted from, and no request reads them.
 */
export function tombstones(db: Db) {
  const stones = db.collection<TombstoneDoc>(COLLECTIONS.tombstones);
  return {
    get(key: string): Promise<TombstoneDoc | null> {
      return stones.findOne({ _id: key });
    },

    async getMany(keys: readonly string[]): Promise<Map<string, TombstoneDoc>> {
      const docs = await readInPieces([...new Set(keys)], (piece) => stones.find({ _id: { $in: piece } }).toArray());
      return new Map(docs.map((d) => [d._id, d]));
    },

    /**
     * Moves the tombstone from version `from` (null: none yet) to `to`: a compare-and-set
     * (versioned-writes.ts), false when another deletion moved it first (read it again).
     */
    async advance(key: string, org: string | null, from: EventVersion | null, to: EventVersion): Promise<boolean> {
      if (from === null) {
        try {
          await stones.insertOne({ _id: key, org, ...to });
          return true;
        } catch (err) {
          if (isDuplicateKey(err)) return false;
          throw err;
        }
      }
      const r = await stones.updateOne(recordAtVersion(key, from) as Filter<TombstoneDoc>, { $set: { org, ...to } });
      return r.matchedCount > 0;
    },
  };
}
