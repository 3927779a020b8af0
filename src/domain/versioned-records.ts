import type { Document, Filter, UpdateFilter } from 'mongodb';
import type { CollectionName, EventVersion, TenantDoc, TombstoneDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import { Tenant } from '../db/tenant';
import { tombstones } from '../db/tombstones';
import { type ApplyOutcome, type EventStamp, version } from './event-time';

/**
 * Records filled from events and the tombstones of their deletions, by the rules of
 * docs/events.md: an event is applied when it is newer than what the record reflects, or of the
 * same time and not among the identities the record applied at that time; the same event twice
 * is a duplicate, an older one stale.
 */

/** How many identities of the newest time a record keeps: more events than this of one time are rare. */
const RECENT_IDS = 16;

export interface VersionedDoc extends TenantDoc, EventVersion {}

/** What an event's version adds to the write, for the fields a record derives from versions (users' activations). */
export interface VersionFields {
  /** Raised to at least these values (`$max`). */
  max?: Record<string, string>;
  /** Set only when the record is created. */
  onInsert?: Document;
}

export interface VersionedUpsert<T extends VersionedDoc> {
  collection: CollectionName;
  /** The whole document to insert when the record does not exist (without its version fields). */
  doc: Omit<T, 'org' | 'event_n' | 'event_ids'>;
  /** Fields to change on an existing record; defaults to every field of `doc`. */
  set?: Partial<T>;
  at: EventStamp;
  /** `_id` of the tombstone a deletion of this record leaves (src/db/tombstones.ts). */
  tombstone: string;
  /** Which organization holds this `_id` now, if any (an `ownerLookup` question). */
  ownerOrg(): Promise<string | null>;
  /** Deletes what hangs off the record in its old organization before it moves to this one. */
  moveOut(old: Tenant): Promise<void>;
  /** Fields the event's version sets (`v`); `after`: the version of what a new record follows (a tombstone, a moved record). */
  fields?(v: string, after: string | null): VersionFields;
}

export interface VersionedResult<T> {
  outcome: ApplyOutcome;
  /** The record as it stands now, in whichever organization holds it (null: deleted by a newer event). */
  current: T | null;
  /** The event's version on this record: `time#n` when applied, `time#0` when not. */
  version: string;
}

const count = (v: EventVersion) => v.event_n ?? 1;
// A record written before identities were kept took every event of its time as the one it had.
const seen = (v: EventVersion, id: string) => v.event_ids === undefined || v.event_ids.includes(id);

/** The version fields of the record after `at` is applied to one reflecting `before` (null: nothing of that time). */
function nextVersion(before: EventVersion | null, at: EventStamp): EventVersion {
  if (!before || before.event_time < at.time) return { event_time: at.time, event_n: 1, event_ids: [at.id] };
  return { event_time: at.time, event_n: count(before) + 1, event_ids: [...(before.event_ids ?? []), at.id].slice(-RECENT_IDS) };
}

/** Where `at` stands against what `v` reflects: not yet applied ('newer'), or already covered. */
export function compare(v: EventVersion, at: EventStamp): ApplyOutcome | 'newer' {
  if (v.event_time > at.time) return 'stale';
  if (v.event_time === at.time && seen(v, at.id)) return 'duplicate';
  return 'newer';
}

const versionOf = (v: EventVersion) => version(v.event_time, count(v));

/** The write of version `next` with the record's own version fields; `$max` merged, so a field is raised once. */
function update(set: Document, next: EventVersion, extra: VersionFields, onInsert: Document = {}): UpdateFilter<Document> {
  const max = extra.max ?? {};
  return {
    $set: { ...set, ...next },
    ...(Object.keys(max).length > 0 ? { $max: max } : {}),
    ...(Object.keys(onInsert).length > 0 ? { $setOnInsert: onInsert } : {}),
  };
}

/**
 * Writes an event's version of a record unless the record already reflects it or something newer.
 *
 * The usual case is one conditional upsert: "this `_id`, older than the event" is updated, or
 * inserted when no record has the `_id`. When a record has it but is not older (or lives in
 * another organization), the insert collides with its `_id` (E11000) and we read it: an event of
 * the same time not applied yet is written with a condition on the version read; a record of
 * another organization moves here when the event is newer. An insert is checked against the
 * tombstone afterwards, so a deletion running at the same moment is never undone, and a record
 * created again after a deletion continues the tombstone's version.
 */
export async function upsertIfNewer<T extends VersionedDoc>(tenant: Tenant, op: VersionedUpsert<T>): Promise<VersionedResult<T>> {
  const records = tenant.collection<T>(op.collection);
  const { at } = op;
  const id = op.doc._id;
  const { _id: _ignored, ...fields } = op.doc as Document;
  const set = (op.set ?? fields) as Document;
  const extraFor = (v: EventVersion, after: string | null) => op.fields?.(versionOf(v), after) ?? {};
  const notApplied = (outcome: ApplyOutcome, current: T | null): VersionedResult<T> => ({ outcome, current, version: version(at.time, 0) });
  /** The version of the record a move left behind, which the record created here follows. */
  let movedFrom: EventVersion | null = null;
  // A few rounds at most: each one that loops saw a concurrent change it now accounts for.
  for (let round = 0; round < 5; round++) {
    const first = nextVersion(movedFrom, at);
    const firstExtra = extraFor(first, movedFrom && versionOf(movedFrom));
    const onInsert = { ...Object.fromEntries(Object.entries(fields).filter(([k]) => !(k in set))), ...firstExtra.onInsert };
    try {
      const { doc, inserted } = await records.upsertOne(
        { _id: id, event_time: { $lt: at.time } } as Filter<T>,
        update(set, first, firstExtra, onInsert) as UpdateFilter<T>,
      );
      if (!inserted) return { outcome: 'applied', current: doc, version: versionOf(first) };
      return await afterInsert(tenant, op, doc, first, movedFrom);
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const existing = await records.findById(id);
    if (existing) {
      const cmp = compare(existing, at);
      if (cmp === 'duplicate') await records.announce([id]);
      if (cmp !== 'newer') return notApplied(cmp, existing);
      if (existing.event_time < at.time) continue; // it changed between the two: try again
      // Another event of the same time came first: this one is applied after it.
      const next = nextVersion(existing, at);
      const doc = await records.findOneAndUpdate(
        { _id: id, event_time: at.time, event_n: existing.event_n } as Filter<T>,
        update(set, next, extraFor(next, null)) as UpdateFilter<T>,
      );
      if (doc) return { outcome: 'applied', current: doc as T, version: versionOf(next) };
      continue;
    }
    const owner = await op.ownerOrg();
    if (owner === null || owner === tenant.org) continue; // deleted meanwhile: insert again
    const old = new Tenant(tenant.db, owner);
    const oldRecords = old.collection<T>(op.collection);
    const there = await oldRecords.findById(id);
    if (!there) continue;
    const cmp = compare(there, at);
    if (cmp === 'duplicate') await oldRecords.announce([id]);
    if (cmp !== 'newer') return notApplied(cmp, there);
    // The record moved organization: its dependents there go first, so a crash leaves a retry
    // that finds the record where it was and finishes the move.
    await op.moveOut(old);
    await oldRecords.deleteOne({ _id: id, event_time: there.event_time } as Filter<T>);
    movedFrom = there;
  }
  throw new Error(`record ${op.collection}/${id} kept changing while an event was applied`);
}

/**
 * A record was just inserted: a tombstone at least as new as the event takes it back (the
 * deletion wins); an older one, or one of the same time that did not apply this event, is what
 * the record follows, so its version continues the tombstone's.
 */
async function afterInsert<T extends VersionedDoc>(
  tenant: Tenant,
  op: VersionedUpsert<T>,
  doc: T,
  written: EventVersion,
  movedFrom: EventVersion | null,
): Promise<VersionedResult<T>> {
  const records = tenant.collection<T>(op.collection);
  const stone = await tombstones(tenant.db).get(op.tombstone);
  const cmp = stone ? compare(stone, op.at) : 'newer';
  if (cmp !== 'newer') {
    await records.deleteOne({ _id: doc._id, event_time: written.event_time, event_n: written.event_n } as Filter<T>);
    return { outcome: cmp, current: null, version: version(op.at.time, 0) };
  }
  // The insert already followed the record a move left; a tombstone newer than that is followed instead.
  if (!stone || (movedFrom && versionOf(movedFrom) >= versionOf(stone))) return { outcome: 'applied', current: doc, version: versionOf(written) };
  // Created again after a deletion: continue its version (a redelivered event of its time stays a duplicate).
  const next = nextVersion(stone, op.at);
  const extra = op.fields?.(versionOf(next), versionOf(stone)) ?? {};
  const fixed = await records.findOneAndUpdate(
    { _id: doc._id, event_time: written.event_time, event_n: written.event_n } as Filter<T>,
    { $set: { ...next, ...extra.onInsert }, ...(extra.max ? { $max: extra.max } : {}) } as UpdateFilter<T>,
  );
  return { outcome: 'applied', current: (fixed as T | null) ?? doc, version: versionOf(next) };
}

/**
 * Records a deletion by event in the tombstone `key` (any organization's), as version `at`
 * applied after `record` (the record being deleted, when it reflects the same time: the
 * tombstone then carries its identities, so none of them can bring it back). Returns what the
 * deletion is: a duplicate or stale one changes nothing.
 */
export async function recordDeletion(db: Tenant['db'], key: string, org: string | null, at: EventStamp, record: EventVersion | null): Promise<ApplyOutcome> {
  const stones = tombstones(db);
  for (let round = 0; round < 5; round++) {
    const stone = await stones.get(key);
    const cmp = stone ? compare(stone, at) : 'newer';
    if (cmp !== 'newer') return cmp;
    // Of two memories of the same time (the record's and the tombstone's), the longer one.
    const base = [record, stone].filter((v): v is EventVersion => v !== null && v.event_time === at.time).sort((a, b) => count(b) - count(a))[0];
    if (await stones.advance(key, org, nextVersion(base ?? null, at))) return 'applied';
  }
  throw new Error(`tombstone ${key} kept changing`);
}

/**
 * A redelivered deletion (a duplicate) announces the deleted record again in the organization it
 * was deleted from, in case the first delivery's process died before its change record.
 */
export async function announceDeletion(db: Tenant['db'], key: string, collection: CollectionName, id: string): Promise<void> {
  const stone = await tombstones(db).get(key);
  if (stone?.org) await new Tenant(db, stone.org).collection(collection).announce([id]);
}

/**
 * True when a record's tombstone was written after the record's own version: a deletion that
 * came after the event that wrote the record (a record created again after its tombstone, at the
 * same time, follows it and is not deleted by it).
 */
export function deletedAfter(stone: TombstoneDoc | null | undefined, record: EventVersion): boolean {
  return !!stone && versionOf(stone) > versionOf(record);
}

/** True when a record's tombstone (null or undefined: none) says it was deleted by an event at least as new as `time`. */
export function deletedSince(stone: Pick<TombstoneDoc, 'event_time'> | null | undefined, time: string): boolean {
  return !!stone && stone.event_time >= time;
}
