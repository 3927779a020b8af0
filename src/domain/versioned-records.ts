import type { Db, Document, Filter, UpdateFilter } from 'mongodb';
import { withCause } from '../db/change-context';
import type { CollectionName, EventVersion, PriorEvent, ProvisionalMark, TenantDoc, TombstoneDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import { Tenant } from '../db/tenant';
import { tombstones } from '../db/tombstones';
import { atVersion, recordAtVersion, versionOf } from '../db/versioned-writes';
import { type ApplyOutcome, type EventStamp, version } from './event-time';

/**
 * Records filled from events and the tombstones of their deletions, by the rules of
 * docs/events.md: an event is applied when it is newer than what the record reflects, or of the
 * same time and not among the identities the record applied at that time; the same event twice
 * is a duplicate, an older one stale.
 */

/** Rounds of read and conditional write a record gets: each one that loops saw a concurrent change it now accounts for. */
export const ROUNDS = 8;

export interface VersionedDoc extends TenantDoc, EventVersion {
  prov?: ProvisionalMark;
}

/** What an event's version adds to the write, for the fields a record derives from versions (users' activations). */
export interface VersionFields {
  /** Set with the event's write (never by a stale or duplicate event: they write nothing). */
  set?: Document;
  /** Raised to at least these values (`$max`). */
  max?: Record<string, string>;
  /** Lowered to at most these values (`$min`). */
  min?: Record<string, string>;
  /** Appended to these arrays (`$push`; a new record's array has it alone). */
  push?: Document;
  /** Added to these counters (`$inc`; a new record's counter starts at it). */
  inc?: Record<string, number>;
  /** Set only when the record is created. */
  onInsert?: Document;
}

/** The fields `extra` gives a record written whole (an insert): what `$push` and `$inc` would make of nothing. */
export function freshFields(extra: VersionFields): Document {
  const pushed = Object.fromEntries(Object.entries(extra.push ?? {}).map(([k, v]) => [k, [v]]));
  return { ...extra.set, ...extra.max, ...extra.min, ...pushed, ...extra.inc, ...extra.onInsert };
}

export interface VersionedUpsert<T extends VersionedDoc> extends VersionedRecordRef {
  /** The whole document to insert when the record does not exist (without its version fields). */
  doc: Omit<T, 'org' | 'event_n' | 'event_ids'>;
  /** Fields to change on an existing record; defaults to every field of `doc`. */
  set?: Partial<T>;
  at: EventStamp;
  /** Fields the event's version sets (`v`); `after`: the version (with its identities) of what a new record follows (a tombstone, a moved record). */
  fields?(v: string, after: EventVersion | null): VersionFields;
  /** What a kept event (refused beside a record whose newest event has no `time`) says of itself beyond its fields. */
  kept?: Pick<PriorEvent, 'act'>;
  /** The same of the record's newest event, when an event without `time` overwrites the record and keeps it. */
  keptOf?(record: T): Pick<PriorEvent, 'act'>;
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
  return { event_time: at.time, event_n: count(before) + 1, event_ids: [...(before.event_ids ?? []), at.id] };
}

/** Where `at` stands against what `v` reflects: not yet applied ('newer'), or already covered. */
export function compare(v: EventVersion, at: EventStamp): ApplyOutcome | 'newer' {
  if (v.event_time > at.time) return 'stale';
  if (v.event_time === at.time && seen(v, at.id)) return 'duplicate';
  return 'newer';
}

/** The version a record reflects (its newest event's). */
export const recordVersion = versionOf;

/**
 * How many other events a record whose newest event has no `time` keeps (ProvisionalMark): the
 * newest ones; an older one arriving later is not kept (docs/events.md states the bound).
 */
export const PRIOR_LIMIT = 16;

/** The fields `set` names, as `record` has them (what an event without `time` overwrote). */
const valuesOf = (record: Document, set: Document) => Object.fromEntries(Object.keys(set).flatMap((k) => (k in record ? [[k, record[k]]] : [])));

/** What the record was, kept by an event without `time` that overwrites it (`about`: what its newest event says of itself). */
const priorOf = <T extends VersionedDoc>(record: T, set: Document, about?: (record: T) => Pick<PriorEvent, 'act'>): PriorEvent => ({
  v: { event_time: record.event_time, event_n: record.event_n ?? 1, event_ids: record.event_ids ?? [] },
  org: record.org,
  set: valuesOf(record, set),
  ...about?.(record),
});

/**
 * The write of version `next` with the record's own version fields; `$max` merged, so a field is
 * raised once. `prov`: the mark of an event without `time` (null: an event with one, which ends it).
 */
function update(set: Document, next: EventVersion, extra: VersionFields, onInsert: Document = {}, prov: ProvisionalMark | null = null): UpdateFilter<Document> {
  const max = extra.max ?? {};
  const min = extra.min ?? {};
  return {
    $set: { ...set, ...extra.set, ...next, ...(prov ? { prov } : {}) },
    ...(prov ? {} : { $unset: { prov: '' } }),
    ...(Object.keys(max).length > 0 ? { $max: max } : {}),
    ...(Object.keys(min).length > 0 ? { $min: min } : {}),
    ...(extra.push ? { $push: extra.push } : {}),
    ...(extra.inc ? { $inc: extra.inc } : {}),
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
  const extraFor = (v: EventVersion, after: EventVersion | null) => op.fields?.(versionOf(v), after) ?? {};
  const notApplied = (outcome: ApplyOutcome, current: T | null): VersionedResult<T> => ({ outcome, current, version: version(at.time, 0) });
  // A deletion at least as new as the event refuses it; a record older than its tombstone (a
  // deletion that lost a race or died half-way) is deleted first, so nothing extends it.
  const { stone, leaving, left: moving } = await tombstones(tenant.db).withMoves(op.tombstone);
  // What began up to the version that left goes (a record created there again since keeps its own).
  for (const org of leaving) await finishMove(tenant.db, op, op.doc._id, org, moving ? versionOf(moving) : undefined);
  if (stone) {
    await finishDeletion(tenant.db, op, stone);
    const cmp = compare(stone, at);
    if (cmp !== 'newer') return notApplied(cmp, null);
  }
  // A record on its way to another organization (deleted where it was, not yet written where it
  // goes) is nowhere for a moment, or longer when its process died in between: an event older
  // than the version that left must not create it as if it had never been. It waits for the
  // record to stand again and is compared with it; when none comes, it is older all the same.
  const vsMoving = moving ? compare(moving, at) : 'newer';
  /** The moves a record written by this event ends: their mark goes once the record stands. */
  const ended = [...leaving];
  const stands = async (result: VersionedResult<T>) => {
    if (result.current) await tombstones(tenant.db).clearMoves(op.tombstone, ended);
    return result;
  };
  /**
   * What a record created here follows: the tombstone read (so the record names the deletion's
   * identities from its first write, and no redelivery or retry takes it for a record older than
   * its tombstone), or the record a move left behind when that is newer.
   */
  let follows: EventVersion | null = newest(stone, vsMoving === 'newer' ? moving : null);
  /** The record a move of this event left behind in another organization (kept by an event without `time`, as what it overwrote). */
  let left: T | null = null;
  for (let round = 0; round < ROUNDS; round++) {
    const first = nextVersion(follows, at);
    const firstExtra = extraFor(first, follows);
    const onInsert = { ...Object.fromEntries(Object.entries(fields).filter(([k]) => !(k in set))), ...firstExtra.onInsert };
    // An event without `time` keeps what it overwrites (the record as read, written on that
    // condition), so the record can be that again if an earlier record of the event moves it back.
    const before = at.provisional ? await records.findById(id) : null;
    if (vsMoving === 'newer' && (!before || before.event_time < at.time)) {
      try {
        const { doc, inserted } = await records.upsertOne(
          { _id: id, event_time: { $lt: at.time }, ...(before ? atVersion(before) : {}) } as Filter<T>,
          update(
            set,
            first,
            firstExtra,
            onInsert,
            at.provisional ? { id: at.id, prior: [before ?? left].flatMap((r) => (r ? [priorOf(r, set, op.keptOf)] : [])) } : null,
          ) as UpdateFilter<T>,
        );
        if (!inserted) return await stands({ outcome: 'applied', current: doc, version: versionOf(first) });
        return await stands(await afterInsert(tenant, op, doc, first, follows));
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
    }
    const existing = await records.findById(id);
    if (existing) {
      const cmp = compare(existing, at);
      if (cmp === 'duplicate') await records.announce([id]);
      // A stale event is kept by a record whose newest event has no `time`: it may be newer than
      // that event's earliest time. A lost race (the event placed again meanwhile) reads again.
      if (
        cmp === 'stale' &&
        existing.prov &&
        !(await keepPrior(tenant, op.collection, existing, { v: nextVersion(null, at), org: tenant.org, set, ...op.kept }))
      ) {
        continue;
      }
      if (cmp !== 'newer') return notApplied(cmp, existing);
      if (existing.event_time < at.time) continue; // it changed between the two: try again
      // Another event of the same time came first: this one is applied after it.
      const next = nextVersion(existing, at);
      const doc = await records.findOneAndUpdate(
        { _id: id, event_time: at.time, event_n: existing.event_n } as Filter<T>,
        update(set, next, extraFor(next, null), {}, at.provisional ? { id: at.id, prior: [priorOf(existing, set, op.keptOf)] } : null) as UpdateFilter<T>,
      );
      if (doc) return { outcome: 'applied', current: doc as T, version: versionOf(next) };
      continue;
    }
    const owner = await op.ownerOrg();
    if (owner === null && vsMoving !== 'newer') {
      if (round === ROUNDS - 1) return notApplied(vsMoving, null);
      await pause(round);
      continue;
    }
    if (owner === null || owner === tenant.org) continue; // deleted meanwhile: insert again
    const old = new Tenant(tenant.db, owner);
    const oldRecords = old.collection<T>(op.collection);
    const there = await oldRecords.findById(id);
    if (!there) continue;
    const cmp = compare(there, at);
    if (cmp === 'duplicate') await oldRecords.announce([id]);
    // Kept there too (a move in the record's past): an earlier record of its newest event may
    // still move that event below this one, which then moves the record here.
    if (cmp === 'stale' && there.prov && !(await keepPrior(old, op.collection, there, { v: nextVersion(null, at), org: tenant.org, set, ...op.kept }))) {
      continue;
    }
    if (cmp !== 'newer') return notApplied(cmp, there);
    // The record moved organization: what hangs off it there goes once the record has left (a
    // newer event that wrote it meanwhile keeps it there, with its dependents). The old
    // organization is marked first, so a process killed between the two leaves work that the
    // next event of the record (its redelivery) finishes: finishMove.
    await tombstones(tenant.db).markMove(op.tombstone, owner, there);
    if ((await oldRecords.deleteOne(recordAtVersion(id, there) as Filter<T>)).deletedCount === 0) continue; // it changed meanwhile: read again
    await finishMove(tenant.db, op, id, owner, versionOf(there));
    ended.push(owner);
    follows = newest(follows, there);
    left = there;
  }
  throw new Error(`record ${op.collection}/${id} kept changing while an event was applied`);
}

/** The condition "the record and its mark are as read" (the mark's count: `ProvisionalMark.n`). */
const markAsRead = (record: VersionedDoc) => ({ ...recordAtVersion(record._id, record), 'prov.n': record.prov?.n ?? { $exists: false } });

/**
 * Keeps `prior`, an event the record refused as stale, in the mark of the record's newest event
 * (one without `time`): the newest PRIOR_LIMIT, oldest first. On the condition that the record
 * and its mark are still as read: false when they are not (the caller reads again and decides
 * again: the event may have moved back below it meanwhile).
 */
async function keepPrior(tenant: Tenant, collection: CollectionName, record: VersionedDoc, prior: PriorEvent): Promise<boolean> {
  const mark = record.prov!;
  const id = prior.v.event_ids![0]!;
  if (mark.prior.some((p) => p.v.event_ids?.includes(id))) return true;
  // A stable sort: events of one version (each kept at `time#1`) stay in arrival order.
  const order = (a: PriorEvent, b: PriorEvent) => (versionOf(a.v) < versionOf(b.v) ? -1 : versionOf(a.v) > versionOf(b.v) ? 1 : 0);
  const kept = [...mark.prior, prior].sort(order).slice(-PRIOR_LIMIT);
  return tenant
    .collection<VersionedDoc>(collection)
    .updateBookkeeping(markAsRead(record) as Filter<VersionedDoc>, { $set: { prov: { ...mark, prior: kept, n: (mark.n ?? 0) + 1 } } });
}

/** What `replaceEarlier` did: the record as it then stands, and what its caller applies again. */
export interface PlacedAgain<T> {
  home: Tenant;
  record: T;
  /** The last deletion refused meanwhile that is newer than the event now. */
  deletion: EventStamp | null;
  /** The record was created again after that deletion by events kept after it. */
  deletionInPast: boolean;
  /**
   * When a kept event newer than the event now named another organization: every kept event
   * newer than it, in the order kept (deletions too), for the caller to apply again.
   */
  elsewhere: PriorEvent[];
}

/** The stamp of a kept event, to apply it again (a tombstone written before identities were kept names none: its time stands in). */
export const keptStamp = (p: PriorEvent): EventStamp => ({ time: p.v.event_time, id: p.v.event_ids?.[0] ?? `t:${p.v.event_time}` });

/**
 * Places again event `eventId`, which has no `time`, at `to`: an earlier Kafka record of it
 * lowered its time from `from` (src/db/event-times.ts). When the record reflects it (its newest
 * event, applied at `from`), the record becomes what event time gives: the events it saw
 * newer than `to` (its mark's `prior`) written over the event's fields in order, the newest
 * one's version its version; else the event stays its newest, at `to`. `extra`: fields the
 * caller's record derives from its version (users' `admin_v`), given the versions before and
 * after. Returns the record as it then stands, with its organization (null: none holds it), and
 * the deletion refused meanwhile that is newer than `to`, for the caller to apply again.
 */
export async function replaceEarlier<T extends VersionedDoc>(
  db: Db,
  ref: VersionedRecordRef,
  id: string,
  eventId: string,
  from: string,
  to: string,
  extra: (record: T, after: string) => Document = () => ({}),
): Promise<PlacedAgain<T> | null> {
  for (let round = 0; round < ROUNDS; round++) {
    const owner = await ref.ownerOrg();
    if (owner === null) return null;
    const home = new Tenant(db, owner);
    const records = home.collection<T>(ref.collection);
    const record = await records.findById(id);
    if (!record) continue;
    const mark = record.prov;
    if (record.event_time !== from || !record.event_ids?.includes(eventId) || mark?.id !== eventId)
      return { home, record, deletion: null, deletionInPast: false, elsewhere: [] };
    // Newer than the event at `to` (a tie goes to the event: its earlier record arrived last),
    // after the last deletion among them, which the caller applies again: it deletes the record
    // when nothing came after it, else (created again by those after it: `deletionInPast`) it
    // takes what began before it.
    // Kept events naming another organization (a move, in event time) cannot be written back
    // here: then the record is left at `to` and every kept event newer than it goes back to the
    // caller (`elsewhere`), to be applied again in the order kept, each as the event it was.
    // The tombstone the record was created again after, when newer than the event now, is such a
    // deletion too: it came before the record, so no mark kept it, but in event time it follows
    // the event (first among events of its time: they all arrived after it).
    const stone = await tombstones(db).get(ref.tombstone);
    const newerKept = withTombstone(mark.prior, stone, owner).filter((p) => p.v.event_time > to);
    const reapply = newerKept.some((p) => p.org !== owner && !p.deleted);
    const after = reapply ? [] : newerKept.filter((p) => p.org === owner);
    const cut = after.map((p) => p.deleted === true).lastIndexOf(true);
    const newer = after.slice(cut + 1);
    const deletion = cut < 0 ? null : keptStamp(after[cut]!);
    const top = newer.at(-1);
    // The record's version names every kept event of its time, the deletion too (a tie: it came
    // before the events that created the record again), so a redelivery of one is a duplicate.
    // So does the tombstone the record was created after: every kept event arrived after it.
    const v: EventVersion = top
      ? (merged([stone, ...(cut < 0 ? [] : [after[cut]!.v]), ...newer.map((p) => p.v)], top.v.event_time) ?? top.v)
      : { event_time: to, event_n: 1, event_ids: [eventId] };
    const fields = Object.assign({}, ...newer.map((p) => p.set)) as Document;
    const kept = top ? {} : { prov: { id: eventId, prior: mark.prior.filter((p) => p.v.event_time <= to), n: (mark.n ?? 0) + 1 } };
    const moved = await records.findOneAndUpdate(
      markAsRead(record) as Filter<T>,
      {
        $set: { ...fields, ...v, ...kept, ...extra(record, versionOf(v)) },
        ...(top ? { $unset: { prov: '' } } : {}),
      } as UpdateFilter<T>,
    );
    const elsewhere = reapply ? newerKept : [];
    if (moved) return { home, record: moved as T, deletion, deletionInPast: deletion !== null && top !== undefined, elsewhere };
  }
  throw new Error(`record ${ref.collection}/${id} kept changing while an event was placed again`);
}

/**
 * Kept events `prior` (in version order) with the tombstone `stone` among them as a deletion
 * when no kept deletion names it, placed before the kept events of its version (it came first).
 */
function withTombstone(prior: PriorEvent[], stone: TombstoneDoc | null, org: string): PriorEvent[] {
  if (!stone || prior.some((p) => p.deleted && p.v.event_time === stone.event_time && p.v.event_ids?.some((i) => stone.event_ids?.includes(i)))) return prior;
  const v = { event_time: stone.event_time, event_n: stone.event_n ?? 1, event_ids: stone.event_ids ?? [] };
  const at = prior.findIndex((p) => versionOf(p.v) >= versionOf(v));
  const kept: PriorEvent = { v, org, set: {}, deleted: true };
  return at < 0 ? [...prior, kept] : [...prior.slice(0, at), kept, ...prior.slice(at)];
}

/**
 * A record was just inserted, following `followed`: a tombstone at least as new as the event
 * takes it back (the deletion wins); a newer one than `followed` (written after our read), older
 * than the event or of its time without it, is what the record follows instead, so its version
 * continues that tombstone's.
 */
async function afterInsert<T extends VersionedDoc>(
  tenant: Tenant,
  op: VersionedUpsert<T>,
  doc: T,
  written: EventVersion,
  followed: EventVersion | null,
): Promise<VersionedResult<T>> {
  const records = tenant.collection<T>(op.collection);
  const stone = await tombstones(tenant.db).get(op.tombstone);
  const cmp = stone ? compare(stone, op.at) : 'newer';
  if (cmp !== 'newer') {
    await records.deleteOne({ _id: doc._id, event_time: written.event_time, event_n: written.event_n } as Filter<T>);
    return { outcome: cmp, current: null, version: version(op.at.time, 0) };
  }
  if (!stone || (followed && versionOf(followed) >= versionOf(stone))) return { outcome: 'applied', current: doc, version: versionOf(written) };
  // A deletion written after our read: continue its version (a redelivered event of its time stays a duplicate).
  const next = nextVersion(stone, op.at);
  const extra = op.fields?.(versionOf(next), stone) ?? {};
  const fixed = await records.findOneAndUpdate(
    { _id: doc._id, event_time: written.event_time, event_n: written.event_n } as Filter<T>,
    { $set: { ...next, ...freshFields(extra) } } as UpdateFilter<T>,
  );
  return { outcome: 'applied', current: (fixed as T | null) ?? doc, version: versionOf(next) };
}

/** One memory of the events of one time, from several (a record's and its tombstone's): every identity, the largest count. */
function merged(versions: (EventVersion | null)[], time: string): EventVersion | null {
  const same = versions.filter((v): v is EventVersion => v !== null && v.event_time === time);
  if (same.length === 0) return null;
  const ids = [...new Set(same.flatMap((v) => v.event_ids ?? []))];
  return { event_time: time, event_n: Math.max(ids.length, ...same.map(count)), event_ids: ids };
}

/**
 * Records a deletion by event in the tombstone `key` (any organization's), as version `at`
 * applied after `record` (the record being deleted, when it reflects the same time: the
 * tombstone then carries its identities, so none of them can bring it back). A compare-and-set
 * on the tombstone's version, read again on a lost race: two deletions of one time both stay
 * named. A tombstone that already names this deletion takes the identities of the record's time
 * it lacks (events applied to the record, in arrival order, before the deletion reached it).
 * Returns what the deletion is: a duplicate or stale one changes nothing.
 */
export async function recordDeletion(db: Db, key: string, org: string | null, at: EventStamp, record: EventVersion | null): Promise<ApplyOutcome> {
  const stones = tombstones(db);
  for (let round = 0; round < ROUNDS; round++) {
    const stone = await stones.get(key);
    const cmp = stone ? compare(stone, at) : 'newer';
    if (cmp === 'stale') return cmp;
    const known = merged([record, stone], at.time);
    let to: EventVersion;
    if (cmp === 'newer') to = nextVersion(known, at);
    else if (stone && known && known.event_ids!.some((i) => !stone.event_ids?.includes(i))) {
      to = { ...known, event_n: Math.max(count(known), record && record.event_time === at.time ? count(record) + 1 : 0) };
    } else return 'duplicate';
    if (await stones.advance(key, org ?? stone?.org ?? null, stone, to)) return cmp === 'newer' ? 'applied' : 'duplicate';
  }
  throw new Error(`tombstone ${key} kept changing`);
}

/** Where a record filled from events lives and what hangs off it: what its deletion deletes. */
export interface VersionedRecordRef {
  collection: CollectionName;
  /** `_id` of the tombstone a deletion of this record leaves (src/db/tombstones.ts). */
  tombstone: string;
  /** Which organization holds this `_id` now, if any (an `ownerLookup` question). */
  ownerOrg(): Promise<string | null>;
  /**
   * Deletes what hangs off the record in organization `home`, once the record has left it (moved
   * elsewhere, or deleted): what began up to version `upTo` (`born_v`; all of it when undefined),
   * so what a record created there again meanwhile began, later, stays.
   */
  deleteDependents(home: Tenant, upTo: string | undefined): Promise<void>;
  /** Derives again what `record` in `home` derives (its search grams, its list facts). */
  rederive(home: Tenant, record: VersionedDoc): Promise<void>;
}

export interface VersionedDeletion extends VersionedRecordRef {
  id: string;
  at: EventStamp;
  /** The organization recorded on the tombstone when none holds the record. */
  org: string | null;
}

export interface DeletionResult {
  outcome: ApplyOutcome;
  /** The record left standing because it reflects the deletion's time or a newer one (a newer event's), with its organization. */
  survivor: { home: Tenant; record: EventVersion } | null;
}

/**
 * The filter of a record's dependents that began up to version `upTo` (`born_v`), and those made
 * before `born_v` was kept; all of them when `upTo` is undefined.
 */
export const bornUpTo = (upTo: string | undefined): Document =>
  upTo === undefined ? {} : { $or: [{ born_v: { $exists: false } }, { born_v: { $lte: upTo } }] };

const VERSION_ONLY = { projection: { event_time: 1, event_n: 1, event_ids: 1, prov: 1 } };

/**
 * Deletes a record by event (docs/events.md, deletions), wherever it lives: the tombstone first,
 * then the record on the condition that it is still at the version read, then what hangs off it. A lost race (an older event of another topic or process wrote it meanwhile) reads
 * it again and deletes again; the deletion is done only when that conditional delete matched, or
 * the record is gone, or it reflects the deletion's time or newer (left standing: `survivor`).
 */
export async function deleteIfNewer(db: Db, op: VersionedDeletion): Promise<DeletionResult> {
  // A move of the record a process left half done: its old organization's dependents go first.
  const { leaving, left } = await tombstones(db).withMoves(op.tombstone);
  for (const org of leaving) await finishMove(db, op, op.id, org, left ? versionOf(left) : undefined);
  let recorded: ApplyOutcome | null = null;
  for (let round = 0; round < ROUNDS; round++) {
    const owner = await op.ownerOrg();
    const home = owner === null ? null : new Tenant(db, owner);
    const records = home?.collection<VersionedDoc>(op.collection);
    const record = (await records?.findById(op.id, VERSION_ONLY)) ?? null;
    const vsRecord = record && compare(record, op.at);
    // Refused by a record whose newest event has no `time`: kept, as that event may move back
    // below it. Not the deletion its tombstone names (the one the record was created again after).
    if (home && record?.prov && vsRecord === 'stale' && !(await namedByTombstone(db, op.tombstone, op.at))) {
      if (!(await keepPrior(home, op.collection, record as VersionedDoc, { v: nextVersion(null, op.at), org: home.org, set: {}, deleted: true }))) continue;
    }
    if (home && record && vsRecord !== 'newer') return { outcome: recorded ?? vsRecord ?? 'stale', survivor: { home, record } };
    const outcome = await recordDeletion(db, op.tombstone, owner ?? op.org, op.at, record);
    recorded ??= outcome;
    if (!home || !records || !record) {
      // An insert that read no tombstone before ours was written has its record in place by now,
      // and so has a move that took the record from where we read it to another organization:
      // read the owner again after the tombstone (as the insert reads the tombstone after its
      // record), so one of the two sees the other.
      if ((await op.ownerOrg()) !== null) continue;
      // Gone already: what hung off it may not be, when the process that deleted it died before.
      const stone = await tombstones(db).get(op.tombstone);
      if (stone?.org) await deleteDependentsOfGone(new Tenant(db, stone.org), op, op.id, versionOf(stone));
      return { outcome: recorded, survivor: null };
    }
    if ((await records.deleteOne(recordAtVersion(op.id, record) as Filter<VersionedDoc>)).deletedCount > 0) {
      await deleteDependentsOfGone(home, op, op.id, versionOf(record));
      return { outcome: recorded === 'stale' ? 'stale' : 'applied', survivor: null };
    }
  }
  throw new Error(`record ${op.collection}/${op.id} kept changing while it was deleted`);
}

/**
 * Deletes what hangs off record `id` in `home` while no record `id` is there: only after the
 * record's conditional delete matched (a deletion or a move that lost its race to a newer event
 * leaves the surviving record's dependents alone), and again on a later delivery that finds the
 * record gone (its process died in between). A record created there again keeps its own: the
 * check and the delete are two steps, so the delete takes only what began up to `upTo` (the
 * gone record's version, or its tombstone's: a record created again follows the tombstone, and
 * what it begins is newer), and a record found there after the delete derives its grams again.
 */
async function deleteDependentsOfGone(home: Tenant, ref: VersionedRecordRef, id: string, upTo: string | undefined): Promise<void> {
  const records = home.collection<VersionedDoc>(ref.collection);
  if (await records.findById(id, VERSION_ONLY)) return;
  await ref.deleteDependents(home, upTo);
  const again = await records.findById(id);
  if (again) await ref.rederive(home, again);
}

/**
 * Deletes what hangs off record `id` in `org`, which a move took it out of, unless the record is
 * there (again). `upTo`: the version of the record that left (a mark written before this version
 * names none: then all of them go). Published as a cascade
 * (docs/events-published.md): the move, not the event, removes them. The move's mark stays until
 * a record stands again (upsertIfNewer): until then it holds the version that left.
 */
async function finishMove(db: Db, ref: VersionedRecordRef, id: string, org: string, upTo: string | undefined): Promise<void> {
  await withCause('cascade', () => deleteDependentsOfGone(new Tenant(db, org), ref, id, upTo));
}

/** The newer of two versions (null: neither). */
const newest = (a: EventVersion | null, b: EventVersion | null) => (!a || (b && versionOf(b) > versionOf(a)) ? b : a);

/** A short wait before reading again, longer each round (a move in flight takes a few writes). */
const pause = (round: number) => new Promise((resolve) => setTimeout(resolve, 5 * 2 ** round));

/**
 * Finishes the deletion `stone` records of a record no organization holds any more: what hung
 * off it in the organization it was deleted from goes, unless the record is there again (the
 * batch path's finishDeletion, before it inserts the record anew: import-users.ts).
 */
export async function finishDeletionOfGone(db: Db, ref: VersionedRecordRef, id: string, stone: TombstoneDoc): Promise<void> {
  if (stone.org) await deleteDependentsOfGone(new Tenant(db, stone.org), ref, id, versionOf(stone));
}

/**
 * Finishes the deletion `stone` records when the record is still older than it (a deletion that
 * died between its tombstone and its delete, or an older event inserted while it ran).
 */
async function finishDeletion<T extends VersionedDoc>(db: Db, op: VersionedUpsert<T>, stone: TombstoneDoc): Promise<void> {
  const last = stone.event_ids?.at(-1) ?? `t:${stone.event_time}`;
  await deleteIfNewer(db, { ...op, id: op.doc._id, at: { time: stone.event_time, id: last }, org: stone.org });
}

/** Whether deletion `at` is one the tombstone `key` names: applied at its time, so delivered again now. */
export async function namedByTombstone(db: Db, key: string, at: EventStamp): Promise<boolean> {
  const stone = await tombstones(db).get(key);
  return !!stone && stone.event_time === at.time && (stone.event_ids ?? []).includes(at.id);
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
