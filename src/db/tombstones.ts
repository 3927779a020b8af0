import type { Db } from 'mongodb';
import { COLLECTIONS, type EventVersion, type TombstoneDoc } from './collections';
import { isDuplicateKey } from './driver-errors';

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
      if (keys.length === 0) return new Map();
      const docs = await stones.find({ _id: { $in: [...new Set(keys)] } }).toArray();
      return new Map(docs.map((d) => [d._id, d]));
    },

    /**
     * Moves the tombstone to `to` unless it already holds a newer time; false when it does. One
     * conditional upsert: a newer tombstone refuses the insert by its `_id`.
     */
    async advance(key: string, org: string | null, to: EventVersion): Promise<boolean> {
      try {
        await stones.updateOne({ _id: key, event_time: { $lte: to.event_time } }, { $set: { org, ...to } }, { upsert: true });
        return true;
      } catch (err) {
        if (isDuplicateKey(err)) return false;
        throw err;
      }
    },
  };
}
