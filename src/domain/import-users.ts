import type { Filter } from 'mongodb';
import { COLLECTIONS, type MembershipDoc, type TombstoneDoc, type UserDoc } from '../db/collections';
import { ownerLookup } from '../db/owners';
import { indexNewUsers, unindexUser } from '../db/search-index';
import type { Tenant } from '../db/tenant';
import { tombstones } from '../db/tombstones';
import { type ApplyOutcome, asStamp, version } from './event-time';
import { syncUserGroups, userGroupFactsAgree } from './list-facts';
import { activationSettled, insertRuleMemberships, matchRules } from './membership-rules';
import { activationFields, type UserFacts, userRecord, userTombstone } from './users';
import { compare, deletedSince } from './versioned-records';

/**
 * What the batch did with one user: the outcome applying it as an event would have had, or
 * `per-event` when the batch left it alone and the caller must apply it as an event (one by one).
 */
export type BatchOutcome = ApplyOutcome | 'per-event';

/**
 * Applies many users of one organization at once, as registration events of `time` would
 * (upsert the user; if active, apply membership rules), with the reads done in advance: one
 * `$in` per collection (the users by `_id` in any organization, their tombstones, then the
 * memberships of those present here). Two kinds of line are decided here:
 * - **already imported**: the record here reflects this very line and nothing the per-event path
 *   would settle is pending (an activation to claim or finish, list facts to derive): a
 *   duplicate, decided in memory by the rules the per-event path uses (`compare`,
 *   `activationSettled`, `userGroupFactsAgree`); one change record for them all;
 * - **new**: no organization has the user and no tombstone is at least as new as `time`: plain
 *   inserts (registerNewUsers).
 * Every other user (present with other data, elsewhere, tombstoned, or a second line for the
 * same id) is answered `per-event`: the per-event path alone knows event-time ordering, moves
 * between organizations and deletions, so the caller applies those with it, after this returns.
 * Every write is conditional on what was read (an insert refuses an existing `_id`, each
 * derived fact names its version), so a concurrent event is never overwritten: a user whose
 * insert lost the race goes per event. Returns one outcome per user of `batch`, in order.
 */
export async function importUserBatch(tenant: Tenant, batch: readonly UserFacts[], time: string): Promise<BatchOutcome[]> {
  const firsts = firstLineOfEachId(batch);
  const users = [...firsts.keys()];
  const [records, stones] = await Promise.all([ownerLookup(tenant.db).userRecords(users.map((u) => u.id)), tombstonesOf(tenant, users)]);
  const outcomes: BatchOutcome[] = batch.map(() => 'per-event');
  const here = users.filter((u) => records.get(u.id)?.org === tenant.org && !stones.has(userTombstone(u.id)));
  for (const u of await alreadyImported(tenant, here, records, time)) outcomes[firsts.get(u)!] = 'duplicate';
  const fresh = users.filter((u) => !records.has(u.id) && !deletedSince(stones.get(userTombstone(u.id)), time));
  for (const [u, outcome] of await registerNewUsers(tenant, fresh, stones, time)) outcomes[firsts.get(u)!] = outcome;
  return outcomes;
}

/**
 * The users of `here` (present in the tenant's organization, no tombstone) whose record already
 * reflects a registration of `time` and who have nothing pending: applied as an event, each
 * would be a duplicate that writes nothing but the announcement of its record
 * (versioned-records.ts), which is made once for all of them.
 */
async function alreadyImported(tenant: Tenant, here: readonly UserFacts[], records: Map<number, UserDoc>, time: string): Promise<UserFacts[]> {
  const stamp = asStamp(time);
  const notApplied = version(time, 0);
  const duplicates = here.filter((u) => {
    const current = records.get(u.id)!;
    return compare(current, stamp) === 'duplicate' && activationSettled({ outcome: 'duplicate', current, version: notApplied }, u.is_active);
  });
  if (duplicates.length === 0) return [];
  const memberships = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findByIds(
    duplicates.map((u) => String(u.id)),
    { projection: { group: 1 } },
  );
  const settled = duplicates.filter((u) => userGroupFactsAgree(records.get(u.id)!, memberships.get(String(u.id))));
  if (settled.length > 0) await tenant.collection<UserDoc>(COLLECTIONS.users).announce(settled.map((u) => String(u.id)));
  return settled;
}

/**
 * Registers users that no organization has yet: plain inserts, batched, instead of ~5 round
 * trips per user. Returns the outcome of each user it registered; one whose insert was refused
 * (created meanwhile) is not in it.
 */
async function registerNewUsers(
  tenant: Tenant,
  fresh: readonly UserFacts[],
  stones: Map<string, TombstoneDoc>,
  time: string,
): Promise<Map<UserFacts, ApplyOutcome>> {
  if (fresh.length === 0) return new Map();
  // The rules are read once, before the inserts: a learner no rule matches has its activation
  // applied by the insert itself (nothing to apply), so only the others claim it and mark it
  // done after their membership, as settleActivation does per event.
  const matches = await matchRules(
    tenant,
    fresh.filter((u) => u.is_active),
  );
  const matched = new Set(matches.map((m) => m.user));
  const inserted = await insertUsers(tenant, fresh, stones, time, matched);
  await indexNewUsers(
    tenant,
    inserted.map((u) => userRecord(u, time).doc),
  );
  const written = new Set(inserted);
  const memberships = await insertRuleMemberships(
    tenant,
    matches.filter((m) => written.has(m.user)),
  );
  // Their claims are done (docs/events.md), unless a newer activation claimed again meanwhile:
  // one statement per user by `_id` (an `$in` update reads the whole organization on FerretDB).
  await tenant
    .collection<UserDoc>(COLLECTIONS.users)
    .updateEach(
      inserted
        .filter((u) => matched.has(u))
        .map((u) => ({ filter: { _id: String(u.id), act_v: version(time, 1), act_done: false } as Filter<UserDoc>, update: { $set: { act_done: true } } })),
    );
  // The memberships first, then the users' derived group from a fresh read, as per event (all of
  // them: a membership may predate its user). Two reads for the batch; writes only where it differs.
  await syncUserGroups(
    tenant,
    inserted.map((u) => u.id),
  );
  const retired = await retiredSince(tenant, inserted, time);
  await takeBackRetired(tenant, retired, memberships, time);
  return new Map(inserted.map((u) => [u, retired.has(u.id) ? 'stale' : 'applied']));
}

/** The first line of each user id, with its index: a repeat of an id is applied per event, after the first. */
function firstLineOfEachId(batch: readonly UserFacts[]): Map<UserFacts, number> {
  const seen = new Set<number>();
  const firsts = new Map<UserFacts, number>();
  batch.forEach((u, i) => {
    if (seen.has(u.id)) return;
    seen.add(u.id);
    firsts.set(u, i);
  });
  return firsts;
}

/** The users' tombstones. */
function tombstonesOf(tenant: Tenant, users: readonly UserFacts[]): Promise<Map<string, TombstoneDoc>> {
  return tombstones(tenant.db).getMany(users.map((u) => userTombstone(u.id)));
}

/** Inserts the users' records in one unordered insert; returns those inserted (a refused `_id` exists somewhere). */
async function insertUsers(
  tenant: Tenant,
  users: readonly UserFacts[],
  stones: Map<string, TombstoneDoc>,
  time: string,
  matched: ReadonlySet<UserFacts>,
): Promise<UserFacts[]> {
  // Each insert is a registration event of `time`: its version fields, and its activation claimed when active
  // (already done when no rule matches it).
  const stamp = asStamp(time);
  const v = version(time, 1);
  const refused = await tenant.collection<UserDoc>(COLLECTIONS.users).insertMany(
    users.map((u) => {
      // Created again after a retirement (an older one: newer ones are left to the per-event path), it follows the tombstone.
      const stone = stones.get(userTombstone(u.id));
      const fields = activationFields(u, u.is_active)(v, stone ? version(stone.event_time, stone.event_n ?? 1) : null);
      const done = fields.onInsert && !matched.has(u) ? { act_done: true } : {};
      return { ...userRecord(u, time).doc, event_n: 1, event_ids: [stamp.id], ...fields.max, ...fields.min, ...fields.onInsert, ...done };
    }),
  );
  return users.filter((u) => !refused.has(String(u.id)));
}

/**
 * The users of `users` whose tombstone is at least as new as `time`: retired while we inserted.
 * A retirement writes its tombstone before deleting, so either it deleted what we inserted or
 * this read sees the tombstone (as upsertIfNewer and applyMembershipRules check per event).
 */
async function retiredSince(tenant: Tenant, users: readonly UserFacts[], time: string): Promise<Set<number>> {
  const stones = await tombstonesOf(tenant, users);
  return new Set(users.filter((u) => deletedSince(stones.get(userTombstone(u.id)), time)).map((u) => u.id));
}

/** Deletes what the batch wrote for users retired meanwhile: the membership it made, then the record of `time`. */
async function takeBackRetired(tenant: Tenant, retired: Set<number>, memberships: readonly MembershipDoc[], time: string): Promise<void> {
  if (retired.size === 0) return;
  // Membership first, as a retirement does: a crash in between leaves only the user.
  for (const m of memberships.filter((m) => retired.has(m.user))) {
    await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: m._id, id: m.id });
  }
  for (const id of retired) {
    await tenant.collection<UserDoc>(COLLECTIONS.users).deleteOne({ _id: String(id), event_time: time });
    await unindexUser(tenant, id, time);
  }
}
