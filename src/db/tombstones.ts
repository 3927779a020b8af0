import type { Db, Filter } from 'mongodb';
import { COLLECTIONS, type EventVersion, type TombstoneDoc } from './collections';
import { readInPieces } from './dialect';
import { isDuplicateKey } from './driver-errors';
import { recordAtVersion, versionOf, versionTime } from './versioned-writes';

/**
 * Tombstones, read and written by `_id` alone. Like the owner lookup (tenant.ts), they answer a
 * question asked before an organization is known, or whatever organization an event names: "was
 * this user or course deleted, and by which event?". They hold no tenant data but the
 * organization a record was deleted from, and no request reads them.
 */
/**
 * The `_id` of the mark a move of the record of tombstone `key` leaves while it runs (beside the
 * tombstones, read with them): the organizations the record is leaving, whose dependents a
 * process killed half-way has not deleted yet, and the version of the record that left
 * (versioned-records.ts: between its delete there and its insert in the new organization the
 * record is nowhere, and an older event must not be written as if it had never been).
 */
export const moveMark = (key: string) => `moving:${key}`;

interface MoveMarkDoc {
  _id: string;
  from: string[];
  /** The newest version (versionOf) of a record that left, and the identities of those versions. */
  left_v?: string;
  left_ids?: string[];
}

/** The version a mark's `left_v` (`<time>#<n>`, versioned-writes.ts) and `left_ids` name. */
function leftVersion(mark: MoveMarkDoc | undefined): EventVersion | null {
  if (!mark?.left_v) return null;
  const event_time = versionTime(mark.left_v);
  return { event_time, event_n: Number(mark.left_v.slice(event_time.length + 1)), event_ids: mark.left_ids ?? [] };
}

export function tombstones(db: Db) {
  const stones = db.collection<TombstoneDoc>(COLLECTIONS.tombstones);
  const marks = db.collection<MoveMarkDoc>(COLLECTIONS.tombstones);
  return {
    /**
     * The tombstone `key` (null: none), the organizations a move of its record left unfinished,
     * and the version of the record that left (null: no move marked), in one read.
     */
    async withMoves(key: string): Promise<{ stone: TombstoneDoc | null; leaving: string[]; left: EventVersion | null }> {
      const docs = await stones.find({ _id: { $in: [key, moveMark(key)] } }).toArray();
      const mark = docs.find((d) => d._id === moveMark(key)) as unknown as MoveMarkDoc | undefined;
      return { stone: docs.find((d) => d._id === key) ?? null, leaving: mark?.from ?? [], left: leftVersion(mark) };
    },

    /** Names `org` as an organization the record of `key` is leaving at version `left`: written before it is deleted there. */
    async markMove(key: string, org: string, left: EventVersion): Promise<void> {
      await marks.updateOne(
        { _id: moveMark(key) },
        { $addToSet: { from: org, left_ids: { $each: left.event_ids ?? [] } }, $max: { left_v: versionOf(left) } },
        { upsert: true },
      );
    },

    /** A record stands again after the moves out of `orgs` (their dependents deleted): the mark forgets them, and goes with the last. */
    async clearMoves(key: string, orgs: readonly string[]): Promise<void> {
      if (orgs.length === 0) return;
      // $pullAll, not $pull with $in: FerretDB v1 ignores a $pull condition (measured: nothing pulled).
      await marks.updateOne({ _id: moveMark(key) }, { $pullAll: { from: [...orgs] } });
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
