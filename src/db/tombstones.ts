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
/**
 * The `_id` of the mark a move of the record of tombstone `key` leaves while it runs (beside the
 * tombstones, read with them): the organizations the record is leaving, whose dependents a
 * process killed half-way has not deleted yet (versioned-records.ts).
 */
export const moveMark = (key: string) => `moving:${key}`;

interface MoveMarkDoc {
  _id: string;
  from: string[];
}

export function tombstones(db: Db) {
  const stones = db.collection<TombstoneDoc>(COLLECTIONS.tombstones);
  const marks = db.collection<MoveMarkDoc>(COLLECTIONS.tombstones);
  return {
    /** The tombstone `key` (null: none) and the organizations a move of its record left unfinished, in one read. */
    async withMoves(key: string): Promise<{ stone: TombstoneDoc | null; leaving: string[] }> {
      const docs = await stones.find({ _id: { $in: [key, moveMark(key)] } }).toArray();
      const mark = docs.find((d) => d._id === moveMark(key)) as unknown as MoveMarkDoc | undefined;
      return { stone: docs.find((d) => d._id === key) ?? null, leaving: mark?.from ?? [] };
    },

    /** Names `org` as an organization the record of `key` is leaving: written before it is deleted there. */
    async markMove(key: string, org: string): Promise<void> {
      await marks.updateOne({ _id: moveMark(key) }, { $addToSet: { from: org } }, { upsert: true });
    },

    /** The move out of `org` is done (its dependents there deleted): the mark forgets it. */
    async clearMove(key: string, org: string): Promise<void> {
      await marks.updateOne({ _id: moveMark(key) }, { $pull: { from: org } });
      await marks.deleteOne({ _id: moveMark(key), from: { $size: 0 } });
    },

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
