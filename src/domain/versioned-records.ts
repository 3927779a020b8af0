import type { Filter, MatchKeysAndValues, UpdateFilter } from 'mongodb';
import { COLLECTIONS, type CollectionName, type TenantDoc, type TombstoneDoc } from '../db/collections';
import { isDuplicateKey } from '../db/errors';
import { Tenant } from '../db/tenant';
import { type ApplyOutcome, outcomeAgainst } from './event-time';

/** A record filled from events: it remembers the `time` of the newest event applied. */
export interface VersionedDoc extends TenantDoc {
  event_time: string;
}

export interface VersionedUpsert<T extends VersionedDoc> {
  collection: CollectionName;
  /** The whole document to insert when the record does not exist (its `event_time` is the event's). */
  doc: Omit<T, 'org'>;
  /** Fields to change on an existing record; defaults to every field of `doc`. */
  set?: MatchKeysAndValues<T>;
  /** `_id` of the tombstone a deletion of this record leaves (see tombstones below). */
  tombstone: string;
  /** Which organization holds this `_id` now, if any (an `ownerLookup` question). */
  ownerOrg(): Promise<string | null>;
  /** Deletes what hangs off the record in its old organization before it moves to this one. */
  moveOut(old: Tenant): Promise<void>;
}

/**
 * Writes an event's version of a record unless the record already reflects an event at least
 * as new, and says which it was.
 *
 * One conditional upsert: "this `_id`, older than the event" is updated, or inserted when no
 * record has the `_id`. When a record has it but is not older (or lives in another
 * organization), the insert collides with its `_id` (E11000), and we read it: a newer or equal
 * record wins; a record of another organization moves here when the event is newer. An
 * insert is checked against the record's tombstone afterwards, so a deletion running at the
 * same moment is never undone.
 */
export async function upsertIfNewer<T extends VersionedDoc>(tenant: Tenant, op: VersionedUpsert<T>): Promise<{ outcome: ApplyOutcome; current: T | null }> {
  const records = tenant.collection<T>(op.collection);
  const time = op.doc.event_time;
  const id = op.doc._id;
  const { _id: _ignored, ...fields } = op.doc;
  const set = (op.set ?? fields) as Record<string, unknown>;
  const onInsert = Object.fromEntries(Object.entries(fields).filter(([k]) => !(k in set)));
  const update = { $set: set, ...(Object.keys(onInsert).length > 0 ? { $setOnInsert: onInsert } : {}) } as UpdateFilter<T>;
  // A few rounds at most: each one that loops saw a concurrent change it now accounts for.
  for (let round = 0; round < 5; round++) {
    try {
      const { doc, inserted } = await records.upsertOne({ _id: id, event_time: { $lt: time } } as Filter<T>, update);
      if (inserted && (await deletedSince(tenant, op.tombstone, time))) {
        await records.deleteOne({ _id: id, event_time: time } as Filter<T>);
        return { outcome: 'stale', current: null };
      }
      return { outcome: 'applied', current: doc };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const existing = await records.findById(id);
    if (existing) {
      const cmp = outcomeAgainst(existing.event_time, time);
      if (cmp !== 'newer') return { outcome: cmp, current: existing };
      continue; // it changed between the two: try again
    }
    const owner = await op.ownerOrg();
    if (owner === null || owner === tenant.org) continue; // deleted meanwhile: insert again
    const old = new Tenant(tenant.db, owner);
    const oldRecords = old.collection<T>(op.collection);
    const there = await oldRecords.findById(id);
    if (!there) continue;
    if (there.event_time >= time) return { outcome: 'stale', current: there };
    // The record moved organization: its dependents there go first, so a crash leaves a retry
    // that finds the record where it was and finishes the move.
    await op.moveOut(old);
    await oldRecords.deleteOne({ _id: id, event_time: there.event_time } as Filter<T>);
  }
  throw new Error(`record ${op.collection}/${id} kept changing while an event was applied`);
}

/**
 * Tombstones: a deletion by event leaves `{_id, event_time}` so that an older event arriving
 * later (from another topic, or redelivered) does not bring the record back. The same
 * conditional upsert as records: moved forward only, never back.
 */
export async function recordDeletion(tenant: Tenant, tombstone: string, time: string): Promise<ApplyOutcome> {
  const stones = tenant.collection<TombstoneDoc>(COLLECTIONS.tombstones);
  for (let round = 0; round < 5; round++) {
    try {
      await stones.upsertOne({ _id: tombstone, event_time: { $lt: time } }, { $set: { event_time: time } });
      return 'applied';
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const existing = await stones.findById(tombstone);
    if (existing) {
      const cmp = outcomeAgainst(existing.event_time, time);
      if (cmp !== 'newer') return cmp;
    }
  }
  throw new Error(`tombstone ${tombstone} kept changing`);
}

/** True when the record was deleted by an event at least as new as `time`. */
export async function deletedSince(tenant: Tenant, tombstone: string, time: string): Promise<boolean> {
  const stone = await tenant.collection<TombstoneDoc>(COLLECTIONS.tombstones).findById(tombstone);
  return stone !== null && stone.event_time >= time;
}
