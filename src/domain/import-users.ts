import type { Filter } from 'mongodb';
import { COLLECTIONS, type LogEntry, type MembershipDoc, type TombstoneDoc, type UserDoc } from '../db/collections';
import { ownerLookup } from '../db/owners';
import { indexNewUsers, unindexUser } from '../db/search-index';
import type { Tenant } from '../db/tenant';
import { moveMark, tombstones } from '../db/tombstones';
import { isSettled } from './activation-log';
import { type ApplyOutcome, asStamp, type EventStamp, version } from './event-time';
import { syncUserGroups, userGroupFacts, userGroupFactsAgree } from './list-facts';
import { insertRuleMemberships, matchRules, reconcileMembership } from './membership-rules';
import { activationFields, finishRetirement, type UserFacts, userRecord, userTombstone } from './users';
import { compare, deletedSince, freshFields } from './versioned-records';

/**
 * What the batch did with one user: the outcome applying it as an event would have had, or
 * `per-event` when the batch left it alone and the caller must apply it as an event (one by one).
 */
export type BatchOutcome = ApplyOutcome | 'per-event';

/**
 * One user as an activation-capable event brings it (a registration, an activation, an import
 * line): the user, and the event's time and identity.
 */
export interface UserLine {
  facts: UserFacts;
  at: EventStamp;
}

/** The users as lines of one time, as `cag import` reads them (every line of a run has the run's time). */
export const linesAt = (users: readonly UserFacts[], time: string): UserLine[] => users.map((facts) => ({ facts, at: asStamp(time) }));

/**
 * Applies many users of one organization at once, as their registration or activation events would
 * (upsert the user; if active, apply membership rules), with the reads done in advance: one
 * `$in` per collection (the users by `_id` in any organization, their tombstones, then the
 * memberships of those present here). Two kinds of line are decided here:
 * - **already imported**: the record here reflects this very line and nothing the per-event path
 *   would settle is pending (a membership to reconcile with the activation log, list facts to
 *   derive): a duplicate, decided in memory by the rules the per-event path uses (`compare`,
 *   `settled_n`, `userGroupFactsAgree`); one change record for them all;
 * - **new**: no organization has the user and no tombstone is at least as new as `time`: plain
 *   inserts (registerNewUsers).
 * Every other user (present with other data, elsewhere, tombstoned, or a second line for the
 * same id) is answered `per-event`: the per-event path alone knows event-time ordering, moves
 * between organizations and deletions, so the caller applies those with it, after this returns.
 * Every write is conditional on what was read (an insert refuses an existing `_id`, each
 * derived fact names its version), so a concurrent event is never overwritten: a user whose
 * insert lost the race goes per event. Returns one outcome per user of `batch`, in order.
 */
export async function importUserBatch(tenant: Tenant, batch: readonly UserLine[]): Promise<BatchOutcome[]> {
  const firsts = firstLineOfEachId(batch);
  const lines = [...firsts.keys()];
  const [records, stones] = await Promise.all([ownerLookup(tenant.db).userRecords(lines.map((l) => l.facts.id)), tombstonesOf(tenant, lines)]);
  const outcomes: BatchOutcome[] = batch.map(() => 'per-event');
  // A tombstone, or a move a killed process left half done (its mark), is the per-event path's.
  const marked = (l: UserLine) => stones.has(userTombstone(l.facts.id)) || stones.has(moveMark(userTombstone(l.facts.id)));
  const here = lines.filter((l) => records.get(l.facts.id)?.org === tenant.org && !marked(l));
  for (const l of await alreadyImported(tenant, here, records)) outcomes[firsts.get(l)!] = 'duplicate';
  const fresh = lines.filter(
    (l) => !records.has(l.facts.id) && !deletedSince(stones.get(userTombstone(l.facts.id)), l.at.time) && !stones.has(moveMark(userTombstone(l.facts.id))),
  );
  for (const [l, outcome] of await registerNewUsers(tenant, fresh, stones)) outcomes[firsts.get(l)!] = outcome;
  return outcomes;
}

/**
 * The lines of `here` (users present in the tenant's organization, no tombstone) whose record
 * already reflects that very event and who have nothing pending: applied as an event, each
 * would be a duplicate that writes nothing but the announcement of its record
 * (versioned-records.ts), which is made once for all of them.
 */
async function alreadyImported(tenant: Tenant, here: readonly UserLine[], records: Map<number, UserDoc>): Promise<UserLine[]> {
  const duplicates = here.filter(({ facts, at }) => {
    const current = records.get(facts.id)!;
    return compare(current, at) === 'duplicate' && isSettled(current);
  });
  if (duplicates.length === 0) return [];
  const memberships = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findByIds(
    duplicates.map((l) => String(l.facts.id)),
    { projection: { group: 1 } },
  );
  // And their grams are those of their version (a crash between a record and its grams leaves
  // `indexed_t` behind): else per event, which derives them again.
  const settled = duplicates.filter((l) => {
    const current = records.get(l.facts.id)!;
    return userGroupFactsAgree(current, memberships.get(String(l.facts.id))) && current.indexed_t === current.event_time;
  });
  if (settled.length > 0) await tenant.collection<UserDoc>(COLLECTIONS.users).announce(settled.map((l) => String(l.facts.id)));
  return settled;
}

/**
 * Registers users that no organization has yet: plain inserts, batched, instead of ~5 round
 * trips per user. Returns the outcome of each user it registered; one whose insert was refused
 * (created meanwhile) is not in it.
 */
async function registerNewUsers(tenant: Tenant, fresh: readonly UserLine[], stones: Map<string, TombstoneDoc>): Promise<Map<UserLine, ApplyOutcome>> {
  if (fresh.length === 0) return new Map();
  // The rules are read once, before the inserts: each activation's entry in the log names the
  // group its rule matched (docs/events.md), and a learner no rule matches is settled by the
  // insert itself (nothing to make).
  const matches = await matchRules(
    tenant,
    fresh.filter((l) => l.facts.is_active).map((l) => l.facts),
  );
  const groupOf = new Map(matches.map((m) => [m.user, m.rule.group]));
  // Their grams first, so that a record present has its grams (its `indexed_t` says so from its
  // insert). A user whose insert is then refused (created meanwhile) leaves stray grams here:
  // a candidate the search checks and drops, never a wrong answer.
  await indexNewUsers(
    tenant,
    fresh.map((l) => userRecord(l.facts, l.at.time).doc),
  );
  // A retirement older than the line whose process died before deleting the membership: finished
  // first, as per event (versioned-records.ts), or the old membership would stay the learner's.
  for (const l of fresh) {
    const stone = stones.get(userTombstone(l.facts.id));
    if (stone) await finishRetirement(tenant.db, l.facts.id, stone);
  }
  const inserted = await insertUsers(tenant, fresh, stones, groupOf);
  const written = new Set(inserted.map((l) => l.facts));
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const v = (l: UserLine) => version(l.at.time, 1);
  // The rules once more, for the active learners inserted as matching none: a rule made and
  // applied to existing learners between the first read and the insert saw neither them nor
  // was seen (per event the rules are read after the record is written). Their log names the
  // rule's group first (a change of the log), then the membership is made. A process dying
  // between the insert and this read misses such a rule for good: docs/events.md, batches.
  const late = await matchRules(
    tenant,
    inserted.filter((l) => l.facts.is_active && !groupOf.has(l.facts)).map((l) => l.facts),
  );
  const byFacts = new Map(inserted.map((l) => [l.facts, l]));
  // One by one (they are rare): a log another event changed meanwhile is left to that event's
  // reconciliation, which reads the rules after its write (membership-rules.ts).
  const named: typeof late = [];
  for (const m of late) {
    const line = byFacts.get(m.user)!;
    const entry = { v: v(line), k: 'a' as const, g: m.rule.group, i: [line.at.id] };
    if (await users.updateBookkeeping({ _id: String(m.user.id), log_n: 1 } as Filter<UserDoc>, { $set: { act_log: [entry] }, $inc: { log_n: 1 } }))
      named.push(m);
  }
  const logN = new Map([...matches.map((m) => [m.user, 1] as const), ...named.map((m) => [m.user, 2] as const)]);
  // Each made at its line's activation (the rule target per event: activation-log.ts).
  const memberships = await insertRuleMemberships(
    tenant,
    [...matches.filter((m) => written.has(m.user)), ...named].map((m) => ({ ...m, rule_v: v(byFacts.get(m.user)!) })),
  );
  // The membership reflects their log now (`settled_n`), unless the log changed meanwhile, and
  // their list facts name the membership just made: one statement per user by `_id` (an `$in`
  // update reads the whole organization on FerretDB). The facts' version moves, so a sync that
  // read before this goes round again; the sync after it reads the memberships afresh and writes
  // only where one changed meanwhile.
  const madeFor = new Map(memberships.map((m) => [m.user, m]));
  const toSettle = inserted.filter((l) => logN.has(l.facts));
  const settledCount = await users.updateEach(
    toSettle.map(({ facts }) => {
      const made = madeFor.get(facts.id);
      const n = logN.get(facts)!;
      return {
        filter: { _id: String(facts.id), log_n: n } as Filter<UserDoc>,
        update: made ? { $set: { settled_n: n, ...userGroupFacts(made) }, $inc: { facts_v: 1 } } : { $set: { settled_n: n } },
      };
    }),
  );
  if (settledCount < toSettle.length) await reconcileUnsettled(tenant, toSettle, logN, madeFor);
  await syncUserGroups(
    tenant,
    inserted.map((l) => l.facts.id),
  );
  const retired = await retiredSince(tenant, inserted);
  await takeBackRetired(tenant, retired, memberships);
  await takeBackMovedAway(tenant, memberships);
  return new Map(inserted.map((l) => [l, retired.has(l) ? 'stale' : 'applied']));
}

/**
 * After a settle that did not land for every user: the log of those users changed between the
 * insert and the settle (an older event on another topic, say), and the reconciliation that
 * change ran may have read no membership yet, so the log's `settled_n` says nothing of the one
 * the batch made. Each is reconciled as the per-event path does after writing a membership
 * (`wroteFor`): only the log the batch wrote it for counts as settled.
 */
async function reconcileUnsettled(
  tenant: Tenant,
  lines: readonly UserLine[],
  logN: ReadonlyMap<UserFacts, number>,
  madeFor: ReadonlyMap<number, MembershipDoc>,
): Promise<void> {
  const now = await tenant.collection<UserDoc>(COLLECTIONS.users).findByIds(
    lines.map((l) => String(l.facts.id)),
    { projection: { log_n: 1 } },
  );
  for (const { facts } of lines) {
    const user = now.get(String(facts.id));
    if (!user || (user.log_n ?? 0) === logN.get(facts)) continue;
    await reconcileMembership(tenant, facts.id, undefined, madeFor.has(facts.id) ? logN.get(facts) : undefined);
  }
}

/** The first line of each user id, with its index: a repeat of an id is applied per event, after the first. */
function firstLineOfEachId(batch: readonly UserLine[]): Map<UserLine, number> {
  const seen = new Set<number>();
  const firsts = new Map<UserLine, number>();
  batch.forEach((l, i) => {
    if (seen.has(l.facts.id)) return;
    seen.add(l.facts.id);
    firsts.set(l, i);
  });
  return firsts;
}

/** The users' tombstones, and the marks of moves left half done (by `moveMark` of the tombstone's key). */
function tombstonesOf(tenant: Tenant, lines: readonly UserLine[]): Promise<Map<string, TombstoneDoc>> {
  return tombstones(tenant.db).getMany(lines.flatMap((l) => [userTombstone(l.facts.id), moveMark(userTombstone(l.facts.id))]));
}

/**
 * Inserts the users' records in one unordered insert; returns those inserted (a refused `_id`
 * exists somewhere). Each insert is its event's first version of the record, with its activation
 * log: an activation names the group its rule matched (`groupOf`), and the membership reflects a
 * log with no rule to apply from the start (`settled_n`).
 */
async function insertUsers(
  tenant: Tenant,
  lines: readonly UserLine[],
  stones: Map<string, TombstoneDoc>,
  groupOf: ReadonlyMap<UserFacts, number>,
): Promise<UserLine[]> {
  const refused = await tenant.collection<UserDoc>(COLLECTIONS.users).insertMany(
    lines.map(({ facts, at }) => {
      // Created again after a retirement (an older one: newer ones are left to the per-event path), it follows the tombstone.
      const stone = stones.get(userTombstone(facts.id));
      const fields = freshFields(activationFields(facts, facts.is_active, at.id)(version(at.time, 1), stone ?? null));
      const g = groupOf.get(facts);
      const log = (fields.act_log ?? []) as LogEntry[];
      return {
        ...userRecord(facts, at.time).doc,
        event_n: 1,
        event_ids: [at.id],
        indexed_t: at.time,
        ...fields,
        act_log: log.map((e) => ({ v: e.v, k: e.k, ...(e.i ? { i: e.i } : {}), ...(g === undefined ? {} : { g }) })),
        ...(g === undefined ? { settled_n: fields.log_n ?? 0 } : {}),
      };
    }),
  );
  return lines.filter((l) => !refused.has(String(l.facts.id)));
}

/**
 * The lines whose user has a tombstone at least as new as the line: retired while we inserted.
 * A retirement writes its tombstone before deleting, so either it deleted what we inserted or
 * this read sees the tombstone (as upsertIfNewer and applyMembershipRules check per event).
 */
async function retiredSince(tenant: Tenant, lines: readonly UserLine[]): Promise<Set<UserLine>> {
  const stones = await tombstonesOf(tenant, lines);
  return new Set(lines.filter((l) => deletedSince(stones.get(userTombstone(l.facts.id)), l.at.time)));
}

/** Deletes what the batch wrote for users retired meanwhile: the membership it made, then the record of the line's time. */
async function takeBackRetired(tenant: Tenant, retired: Set<UserLine>, memberships: readonly MembershipDoc[]): Promise<void> {
  if (retired.size === 0) return;
  const ids = new Set([...retired].map((l) => l.facts.id));
  // Membership first, as a retirement does: a crash in between leaves only the user.
  for (const m of memberships.filter((m) => ids.has(m.user))) {
    await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: m._id, id: m.id });
  }
  for (const { facts, at } of retired) {
    await tenant.collection<UserDoc>(COLLECTIONS.users).deleteOne({ _id: String(facts.id), event_time: at.time });
    await unindexUser(tenant, facts.id, at.time);
  }
}

/**
 * Deletes the memberships the batch made for users no longer here: moved to another organization
 * (or retired) while we inserted. A move deletes the record here before what hangs off it, so
 * either it deleted the membership we made or this read sees the record gone (as retiredSince
 * for a retirement). One left behind would be another organization's learner's, and its key
 * (the user id) would refuse them a membership there.
 */
async function takeBackMovedAway(tenant: Tenant, memberships: readonly MembershipDoc[]): Promise<void> {
  if (memberships.length === 0) return;
  const owners = await ownerLookup(tenant.db).userOrgs(memberships.map((m) => m.user));
  for (const m of memberships.filter((m) => owners.get(m.user) !== tenant.org)) {
    await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: m._id, id: m.id });
  }
}
