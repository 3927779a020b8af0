import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { withCause } from '../db/change-context';
import { recordAfterWrite } from '../db/change-log';
import { COLLECTIONS, type LearnerRecordDoc, type MembershipDoc, type UserDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import { indexUser, unindexUser } from '../db/search-index';
import { Tenant } from '../db/tenant';
import { learnerRecords, legacyLearnerHistory } from '../db/user-records';
import { entryOf, historyBounds, isLegacyDuplicate, legacyIdsOf, OUTCOME, storedHistory, writesNothing } from './arrivals';
import type { ApplyOutcome, EventStamp } from './event-time';
import { foldLearner, type IsLiveGroup, type LearnerEntry, type LearnerFacts, type LearnerState, learnerFold } from './learner-fold';
import { syncUserGroups } from './list-facts';
import { type Arriving, arrive, compact, emptyHistory, type History, newestPlace, placeKey, placeNow } from './record-history';
import { matchRules } from './rule-match';

/**
 * Learners (docs/event-core.md): a learner's record holds its history, and what the learner is
 * (profile, flags, organization, membership) follows from `foldLearner`. Every path that changes
 * a learner comes here: user events one by one, the batch path and `cag import`
 * (import-users.ts), retirements, administrators' membership changes and rules applied to
 * existing learners. This file reads, folds, writes on the condition that nobody wrote first,
 * and brings what hangs off the learner (its membership, list facts, search grams) in line.
 */

/** A user as the LMS describes it (the `user` of the user events, flattened). */
export interface UserFacts extends LearnerFacts {
  id: number;
}

type LearnerHistory = History<LearnerEntry, LearnerState>;
type EntryBody = Arriving<LearnerEntry> extends infer A ? (A extends unknown ? Omit<A, 'source' | 'id' | 'at' | 'timed'> : never) : never;

/**
 * Rounds of read, fold and conditional write: each one that loops saw a concurrent write it now
 * accounts for, so of N writers racing on one learner each wins within N rounds; past 64 the
 * record is taken to be changing without end (a bug), and the error says so.
 */
const ROUNDS = 64;

/** A short random wait after a lost compare-and-set, longer each round (up to 50 ms): racing writers spread out instead of colliding again. */
const giveWay = (round: number) => new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** round)));

/** The history a record holds (none: the learner's first entry is to come). */
export const learnerHistory = (doc: LearnerRecordDoc | null): LearnerHistory => (doc?.h ? storedHistory(doc.h) : emptyHistory());

/**
 * The history of `doc`, read as the upgrade would write it when it has none yet (a record stored
 * before histories were kept, or seeded): its version is the floor, with the membership it has.
 */
async function historyOf(db: Db, doc: LearnerRecordDoc | null): Promise<LearnerHistory> {
  if (doc === null || doc.h) return learnerHistory(doc);
  const membership = doc.org === null ? null : await new Tenant(db, doc.org).collection<MembershipDoc>(COLLECTIONS.memberships).findById(doc._id);
  return storedHistory(legacyLearnerHistory(doc, membership));
}

/** The group an entry names, or null. */
const groupOf = (e: EntryBody | LearnerEntry) => (e.kind === 'user' ? e.rule : e.kind === 'retired' ? null : e.group);

/** Every group an entry of the history (or its floor) names: the fold asks which of them are live. */
function groupsNamed(h: LearnerHistory): number[] {
  const ids = new Set<number>();
  const floor = h.floor?.state.membership;
  if (floor) ids.add(floor.group);
  for (const e of h.entries) {
    const group = groupOf(e);
    if (group !== null) ids.add(group);
  }
  return [...ids];
}

/** Which of the groups the history (and `entry`) names exist (group ids are never reused: a missing one was deleted). */
async function liveGroups(db: Db, h: LearnerHistory, entry?: EntryBody): Promise<IsLiveGroup> {
  const ids = new Set(groupsNamed(h));
  const own = entry && groupOf(entry);
  if (own !== undefined && own !== null) ids.add(own);
  if (ids.size === 0) return () => false;
  const docs = await db
    .collection<{ _id: string }>(COLLECTIONS.groups)
    .find({ _id: { $in: [...ids].map(String) } }, { projection: { _id: 1 } })
    .toArray();
  const live = new Set(docs.map((d) => Number(d._id)));
  return (group) => live.has(group);
}

/** An activation or join as it arrives: with the groups its history names that are deleted (learner-fold.ts `inGroup`). */
function withGone(made: EntryBody, before: LearnerHistory, isLive: IsLiveGroup): EntryBody {
  if (made.kind !== 'user' && made.kind !== 'join') return made;
  return { ...made, gone: groupsNamed(before).filter((g) => !isLive(g)) };
}

/** The record a history folds to, after `doc` (null: the learner's first entry). A retired learner's profile is blanked. */
export function learnerRecordOf(id: number, doc: LearnerRecordDoc | null, h: LearnerHistory, isLive: IsLiveGroup): LearnerRecordDoc {
  const state = foldLearner(h, isLive);
  const r = state.record;
  const org = r?.org ?? null;
  const left = [...(doc?.left ?? [])];
  if (doc?.org && doc.org !== org) left.push({ org: doc.org, upTo: placeKey(placeNow(h)) });
  return {
    _id: String(id),
    id,
    org,
    username: r?.username ?? '',
    name: r?.name ?? '',
    email: r?.email ?? '',
    email_lower: r?.email.toLowerCase() ?? '',
    is_active: r?.is_active ?? false,
    is_staff: r?.is_staff ?? false,
    is_site_admin: r?.is_site_admin ?? false,
    listed: r?.is_site_admin ? 0 : 1,
    m: state.membership && { group: state.membership.group, auto: state.membership.by === 'rule', born: placeKey(state.membership.born) },
    h: h as unknown as UserDoc['h'],
    rev: (doc?.rev ?? 0) + 1,
    since: placeKey(state.since),
    left,
    ...(legacyIdsOf(doc) ? { legacy_ids: legacyIdsOf(doc) } : {}),
    event_time: newestPlace(h)?.at ?? '',
    grp: doc?.grp ?? 0,
    member: doc?.member ?? 0,
    facts_v: doc?.facts_v ?? 0,
  };
}

/** The entry a user event (or an import line) makes: what it says, and the group its rule matched when it arrived. */
export function userEntry(facts: UserFacts, org: string, capable: boolean, rule: number | null): EntryBody {
  const { id: _id, ...said } = facts;
  // No group is gone for a learner's first entry; `applyLearnerEntry` says which are for a later one.
  return { kind: 'user', org, facts: said, capable, rule, gone: [] };
}

/**
 * The record of a learner's first entry, when no record exists: what the batch path inserts
 * (import-users.ts), and the documents the import bench's ceiling writes.
 */
export function firstRecord(facts: UserFacts, org: string, at: string | EventStamp, capable: boolean, rule: number | null): LearnerRecordDoc {
  const { base } = entryOf(at);
  const { history } = arrive(emptyHistory<LearnerEntry, LearnerState>(), { ...base, ...userEntry(facts, org, capable, rule) } as Arriving<LearnerEntry>);
  // The rule's group was read just now: live unless deleted since (the projection checks again).
  return learnerRecordOf(
    facts.id,
    null,
    compact(
      history,
      learnerFold(() => true),
      historyBounds(),
    ),
    () => true,
  );
}

/** Where an entry made now (an administrator's change, a rule applied to existing learners) stands: after everything the record holds. */
const madeNow = (h: LearnerHistory) => ({ source: 'cag', id: randomUUID(), at: newestPlace(h)?.at ?? '', timed: true });

export interface LearnerArrival {
  outcome: ApplyOutcome;
  /** The entry's arrival on the record (`seq`), when it was written. */
  seq: number;
  /** The record as it stands after the arrival (null: none). */
  current: LearnerRecordDoc | null;
  /** The entry was the newest and closed an activation period (the period's one activation). */
  activated: boolean;
}

/**
 * The one way an entry reaches a learner: read the record, let the entry arrive, fold, write on
 * the condition that nobody wrote first (else read and fold again), then bring what hangs off the
 * learner in line (`project`). `at`: the event's stamp, or null for a change made now, whose body
 * may depend on the learner's state (and throw to refuse it). A duplicate writes nothing but
 * projects again, finishing what a process that died after its write left undone.
 */
export async function applyLearnerEntry(
  db: Db,
  id: number,
  at: string | EventStamp | null,
  body: EntryBody | ((state: LearnerState, doc: LearnerRecordDoc | null) => EntryBody),
): Promise<LearnerArrival> {
  const records = learnerRecords(db);
  const event = at === null ? null : entryOf(at);
  for (let round = 0; round < ROUNDS; round++) {
    const doc = await records.read(id);
    const before = await historyOf(db, doc);
    let made: EntryBody;
    let stateBefore: LearnerState | null = null;
    let isLive: IsLiveGroup;
    if (typeof body === 'function') {
      // A change made now is checked against what the learner is, in full: a projection a dead
      // process left unfinished is finished first (a retried request then finds its membership).
      if (doc) await project(db, doc); // nothing to do when it is projected
      stateBefore = foldLearner(before, await liveGroups(db, before));
      made = body(stateBefore, doc);
      isLive = await liveGroups(db, before, made);
    } else {
      made = body;
      isLive = await liveGroups(db, before, made);
    }
    made = withGone(made, before, isLive);
    const base = event?.base ?? madeNow(before);
    const { history, arrival } =
      event && isLegacyDuplicate(doc, event.stamp)
        ? { history: before, arrival: 'duplicate' as const }
        : arrive(before, { ...base, ...made } as Arriving<LearnerEntry>);
    if (writesNothing(history, before, arrival, base)) {
      return { outcome: OUTCOME[arrival], seq: before.seq, current: doc && (await project(db, doc)), activated: false };
    }
    const next = learnerRecordOf(id, doc, compact(history, learnerFold(isLive), historyBounds()), isLive);
    if (!(await records.writeIfUnchanged(doc, next))) {
      await giveWay(round);
      continue;
    }
    const activated = arrival === 'applied' && closedPeriod(stateBefore ?? foldLearner(before, isLive), foldLearner(history, isLive), made);
    // Projected as stored: with the marks and batch of projections under way, whose organizations it cleans.
    return { outcome: OUTCOME[arrival], seq: history.seq, current: await project(db, { ...doc, ...next }), activated };
  }
  throw new Error(`learner ${id} kept changing while an entry was applied`);
}

/** Whether the newest entry was its period's one activation: the period was open before it (or a new incarnation began) and is closed after. */
function closedPeriod(before: LearnerState, after: LearnerState, made: EntryBody): boolean {
  if (made.kind !== 'user' || after.periodOpen || after.record === null) return false;
  return before.record === null || before.record.org !== after.record.org || before.periodOpen;
}

/**
 * Whether what follows from the record is in place: its revision projected, nothing left behind
 * elsewhere, no projection under way, on the record or in the batch that inserted it (`pending`:
 * the batches under way, `pendingBatches` of user-records.ts).
 */
export const isProjected = (doc: LearnerRecordDoc, pending: ReadonlyMap<string, string>) =>
  doc.projected === doc.rev && !doc.left?.length && !doc.writing?.length && !(doc.batch !== undefined && pending.has(doc.batch));

/** A mark: where a projection writes (`org`), since when, and whose (`token`). Sorting marks sorts them by time. */
export const newMark = (token: string, org: string) => `${new Date().toISOString()}|${token}|${org}`;

/**
 * One learner's projection and its marks: one per organization it writes in, made (an intent,
 * and on the record `writing`) before it writes there, taken off when it is done. `inherited`:
 * marks of a projection this one finishes (a batch's), cleaned like its own but not its own.
 */
export class Projection {
  private readonly token = randomUUID();
  private readonly marked = new Map<string, string>();

  constructor(private readonly inherited: readonly string[] = []) {}

  /** The mark for writing in `org` (one per organization), and whether it is new. */
  mark(org: string): { mark: string; isNew: boolean } {
    const known = this.marked.get(org);
    if (known) return { mark: known, isNew: false };
    const mark = newMark(this.token, org);
    this.marked.set(org, mark);
    return { mark, isNew: true };
  }

  /** Its own marks. */
  get marks(): string[] {
    return [...this.marked.values()];
  }

  /** Every mark saying where it may have written: its own and those it inherited. */
  get wrote(): string[] {
    return [...this.inherited, ...this.marks];
  }
}

/** The organization a mark names. */
const markedOrg = (mark: string) => mark.slice(mark.indexOf('|', mark.indexOf('|') + 1) + 1);

/**
 * What follows from the record (docs/event-core.md, "What hangs off a record"): nothing of the
 * learner stays in an organization it left (its membership, its search grams), and in its own the
 * membership is the fold's, the list facts follow it and the grams follow the profile. Run after
 * every write and by any later arrival, until the record read after it is the one projected: a
 * writer that came in between projects its own revision too, and the last projection is of the
 * newest. Idempotent.
 */
export async function project(db: Db, doc: LearnerRecordDoc, projection = new Projection()): Promise<LearnerRecordDoc> {
  const pending = await learnerRecords(db).pendingBatches([doc]);
  if (isProjected(doc, pending)) return doc;
  // A batch under way that inserted the record marks it as a projection on the record does.
  const batchMark = doc.batch === undefined ? undefined : pending.get(doc.batch);
  await projectOnce(db, batchMark === undefined ? doc : { ...doc, writing: [...(doc.writing ?? []), batchMark] }, projection);
  return afterProjection(db, doc, projection);
}

/**
 * After what follows from `done` was written (by `project`, or in bulk by the batch path): the
 * record read again is still `done`, and says so (`projected`, the projection's marks off); or
 * it was written meanwhile, and what this projection wrote may undo the newer one's (whose
 * `projected` mark may already be set), so the newer record is projected again, cleaning where
 * the marks (this projection's among them) point when the learner is no longer there; and so on
 * until a projection is of the newest record.
 */
export async function afterProjection(db: Db, done: LearnerRecordDoc, projection: Projection): Promise<LearnerRecordDoc> {
  const records = learnerRecords(db);
  let current = done;
  for (let round = 0; round < ROUNDS; round++) {
    const now = (await records.read(current.id)) ?? current;
    if (now.rev === current.rev && (await records.projected(now._id, now.rev!, projection.marks))) {
      await records.closeIntents(projection.marks);
      // As stored now: with its list facts, which the projection derived.
      const own = new Set(projection.marks);
      return { ...now, left: [], projected: now.rev!, writing: (now.writing ?? []).filter((m) => !own.has(m)) };
    }
    current = now;
    await projectOnce(db, current, projection);
  }
  throw new Error(`learner ${done.id} kept changing while what hangs off it was brought in line`);
}

/**
 * A membership written by the projection of revision `rev` or an older one (or before memberships
 * said which): a projection deletes or rewrites only those, so a slow projection of an older
 * revision never undoes what a newer one wrote (and a membership keeps the id its POST returned).
 */
const writtenUpTo = (rev: number) => ({ $or: [{ rev: { $lte: rev } }, { rev: { $exists: false } }] });

async function projectOnce(db: Db, doc: LearnerRecordDoc, projection: Projection): Promise<void> {
  // Where the learner was (`left`), and where a projection may have written (a mark: on the
  // record, or this projection's own, a batch's being kept apart), but is not now.
  const upToNow = `${doc.event_time}#9999999999`;
  const away = new Map([...(doc.writing ?? []), ...projection.wrote].map((m) => [markedOrg(m), upToNow]));
  for (const { org, upTo } of doc.left ?? []) away.set(org, upTo);
  away.delete(doc.org ?? '');
  for (const [org, upTo] of away) {
    const there = new Tenant(db, org);
    // A move takes the membership as a cascade; a retirement as the event's own doing.
    // Only what this revision or an older one wrote: the learner may be back, with a newer membership.
    const removal = () => there.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: doc._id, ...writtenUpTo(doc.rev!) });
    await (doc.org === null ? removal() : withCause('cascade', removal));
    await unindexUser(there, doc.id, upTo.slice(0, upTo.indexOf('#')));
    await recordAfterWrite(db, COLLECTIONS.users, [{ k: doc._id, o: org }]);
  }
  if (doc.org === null) return;
  // Marked before the first write here: if this process dies after it, the mark outlives it.
  const { mark, isNew } = projection.mark(doc.org);
  if (isNew) {
    // The intent first: the sweep finds abandoned projections there, reading no record.
    await learnerRecords(db).openIntent(mark, mark, [doc._id]);
    await learnerRecords(db).markWriting(doc._id, mark);
  }
  const home = new Tenant(db, doc.org);
  await syncMembership(db, home, doc);
  await syncUserGroups(home, [doc.id]);
  await indexUser(home, doc as UserDoc);
  await recordAfterWrite(db, COLLECTIONS.users, [{ k: doc._id, o: doc.org }]);
}

/** How old a mark is before the sweep takes its projection for abandoned (a projection takes milliseconds). */
export const PROJECTION_LEASE_MS = 120_000;

/**
 * Finishes projections a dead process left under way (an intent older than `leaseMs`): each
 * learner it names is projected again as if the intent's mark were on its record (cleaning where
 * it wrote if the learner left, its own organization brought in line), then the mark comes off
 * the record and the intent goes. Returns how many learners it finished; any process may run it.
 */
export async function finishAbandonedProjections(db: Db, leaseMs = PROJECTION_LEASE_MS, now = Date.now()): Promise<number> {
  const records = learnerRecords(db);
  const cutoff = new Date(now - leaseMs).toISOString();
  let finished = 0;
  // At most 100 a call: the next call (a minute later) takes the rest.
  for (const intent of await records.abandonedIntents(cutoff, 100)) {
    const docs = await records.readMany(intent.ids.map(Number));
    for (const doc of docs.values()) {
      // Its mark is on the record, or the record's batch is this intent (still open): `project` cleans where it points.
      await project(db, { ...doc, projected: 0 });
      await records.unmark(doc._id, [intent.mark]);
    }
    await records.closeIntents([intent._id]);
    finished += docs.size;
  }
  return finished;
}

/**
 * The membership as the record's `m` says: inserted (an id claimed), moved, or deleted. A
 * membership hangs off its group too: written, then the group read again, and taken back when a
 * deletion of the group swept before the write.
 */
async function syncMembership(db: Db, home: Tenant, doc: LearnerRecordDoc): Promise<void> {
  const memberships = home.collection<MembershipDoc>(COLLECTIONS.memberships);
  const rev = doc.rev!;
  const want = doc.m ?? null;
  let have = await memberships.findById(doc._id);
  // Whether the record is still of this revision (no newer one decides instead).
  const isNewest = async () => (await learnerRecords(db).read(doc.id))?.rev === rev;
  const groupLives = async (group: number) =>
    (await db.collection<{ _id: string }>(COLLECTIONS.groups).findOne({ _id: String(group), org: home.org } as never, { projection: { _id: 1 } })) !== null;
  if (want === null) {
    if (have) await memberships.deleteOne({ _id: have._id, id: have.id, ...writtenUpTo(rev) });
    return;
  }
  const byRule = <R>(write: () => Promise<R>) => (want.auto ? withCause('rule', write) : write());
  // One begun before the learner's current incarnation (a late retirement or move in between) is
  // not this one: it goes, and the learner's membership is a new one, as in every other order.
  if (have && (have.born ?? '') < (doc.since ?? '')) {
    await memberships.deleteOne({ _id: have._id, id: have.id, ...writtenUpTo(rev) });
    if (await memberships.has({ _id: doc._id })) return; // a newer projection wrote it: the newer one decides
    have = null;
  }
  // A learner has one membership: the one there is brought in line in place (its public id kept),
  // whatever the history made of it since; a new one is inserted only where there is none.
  if (have && have.group === want.group && have.automatic === want.auto && (have.born ?? '') === want.born) {
    // In place already; unless its group was deleted since the record was folded (a batch folds
    // new learners' rule groups as live): the membership goes with its group.
    if (!(await groupLives(want.group))) await memberships.deleteOne({ _id: have._id, id: have.id });
    return;
  }
  const fields = { group: want.group, automatic: want.auto, born: want.born, rev };
  let reuse: number | null = null;
  if (have) {
    const moved = await byRule(() => memberships.updateOne({ _id: have._id, id: have.id, ...writtenUpTo(rev) }, { $set: fields }));
    // Not moved: a newer projection wrote it, or it is gone since it was read: swept by its old
    // group's deletion after this revision moved it away (made again, with its id), or deleted by
    // a newer revision (which decides: this projection's `afterProjection` projects it).
    if (moved.matchedCount === 0) {
      if (await memberships.has({ _id: doc._id })) return;
      if (!(await isNewest())) return;
      reuse = have.id;
    }
  }
  if (!have || reuse !== null) {
    const id = reuse ?? (await home.nextId('memberships'));
    const insert = () => byRule(() => memberships.insertOne({ _id: doc._id, id, user: doc.id, ...fields }));
    try {
      await insert();
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      // The learner's one membership is where the learner is: one left in another organization
      // goes, unless this projection is of a record written over since (the newer one decides).
      if (!(await isNewest())) return;
      const elsewhere = await db.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: doc._id }, { projection: { org: 1 } });
      if (!elsewhere || elsewhere.org === home.org) return; // a concurrent projection made it: the caller reads again
      // Only one this revision or an older one left there: a newer one that put it there decides.
      await withCause('cascade', () =>
        new Tenant(db, elsewhere.org).collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: doc._id, ...writtenUpTo(rev) }),
      );
      if (await db.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: doc._id }, { projection: { _id: 1 } })) return;
      await insert();
    }
  }
  // A membership hangs off its group too: a deletion of the group may have swept before this write.
  if (!(await groupLives(want.group))) await memberships.deleteOne({ _id: doc._id, group: want.group });
}

/** Whether the organization has user `id`, site administrators included (a membership may name one). */
export const userExists = (tenant: Tenant, id: number) => tenant.collection<UserDoc>(COLLECTIONS.users).has({ _id: String(id) });

/**
 * Records a user event's entry (docs/event-core.md); `capable`: its type can be an activation.
 * The entry carries the group of the rule its email matches now (the fold applies it if the
 * entry is its period's activation). A rule created and applied to existing learners while this
 * event arrived may have read the learner before the record was written, as this read may have
 * missed the rule: after the write the rules are read again, and an activation that matched none
 * is completed with the group of one that matches now (`completeArrivalRule`).
 */
export async function upsertUser(tenant: Tenant, facts: UserFacts, at: string | EventStamp, capable = false): Promise<LearnerArrival> {
  const rule = capable && facts.is_active ? await ruleGroup(tenant, facts) : null;
  const arrival = await applyLearnerEntry(tenant.db, facts.id, at, userEntry(facts, tenant.org, capable, rule));
  if (arrival.activated && rule === null) {
    const late = await ruleGroup(tenant, facts);
    if (late !== null) return { ...arrival, current: (await completeArrivalRule(tenant.db, facts.id, arrival.seq, late)) ?? arrival.current };
  }
  return arrival;
}

/**
 * Completes arrival `seq`, a user event whose read of the rules matched none, with the group of
 * a rule its email matched on the second read after its write (`upsertUser`, the batch path): a
 * rule created and applied to existing learners while the event arrived may have read the learner
 * before the record was written, as the first read missed the rule, so the arrival is what either
 * read saw. The fold then decides, as for any arrival: the rule applies if the arrival is its
 * period's activation and the learner was in no group; an administrator's change, a retirement
 * or a move that came after it stays after it. Nothing when the arrival is no longer kept
 * (compacted into the floor: a bound, docs/event-core.md) or matched a rule. The record as written, or null.
 */
export async function completeArrivalRule(db: Db, id: number, seq: number, group: number): Promise<LearnerRecordDoc | null> {
  const records = learnerRecords(db);
  for (let round = 0; round < ROUNDS; round++) {
    const doc = await records.read(id);
    const before = await historyOf(db, doc);
    const arrived = before.entries.find((e) => e.seq === seq);
    if (!doc || arrived?.kind !== 'user' || arrived.rule !== null) return null;
    const history = { ...before, entries: before.entries.map((e) => (e === arrived ? { ...arrived, rule: group } : e)) };
    const isLive = await liveGroups(db, history);
    // Deleted since the second read: entries arriving since (their `gone` reckoned without it)
    // never saw the learner in it, and the arrival is as if the rule had not been found.
    if (!isLive(group)) return null;
    const next = learnerRecordOf(id, doc, compact(history, learnerFold(isLive), historyBounds()), isLive);
    if (await records.writeIfUnchanged(doc, next)) return project(db, { ...doc, ...next });
    await giveWay(round);
  }
  throw new Error(`learner ${id} kept changing while an arrival's rule was completed`);
}

/** The group of the rule `facts`' email matches in the organization, or null. */
async function ruleGroup(tenant: Tenant, facts: Pick<UserFacts, 'id' | 'email'>): Promise<number | null> {
  return (await matchRules(tenant, [facts]))[0]?.rule.group ?? null;
}

/** Retires a learner, wherever they are: their record stays, in no organization, so that no older or redelivered event brings them back. */
export async function retireUser(db: Db, userId: number, at: string | EventStamp): Promise<ApplyOutcome> {
  return (await applyLearnerEntry(db, userId, at, { kind: 'retired' })).outcome;
}

/**
 * The learner joins `group` as a rule's doing, if they are active in `org` with no group (a rule
 * applied to existing learners). True when they are then a member of it by rule.
 */
export async function joinByRule(db: Db, org: string, userId: number, group: number): Promise<boolean> {
  const { current } = await applyLearnerEntry(db, userId, null, (state) => {
    if (state.record?.org !== org || !state.record.is_active || state.membership !== null) throw new NotJoined();
    return { kind: 'join', org, group };
  }).catch((err: unknown) => {
    if (err instanceof NotJoined) return { current: null };
    throw err;
  });
  return current?.m?.group === group && current.m.auto;
}

class NotJoined extends Error {}
