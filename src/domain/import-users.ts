import type { Filter } from 'mongodb';
import { COLLECTIONS, type MembershipDoc, type TombstoneDoc, type UserDoc } from '../db/collections';
import { ownerLookup } from '../db/owners';
import { indexNewUsers, unindexUser } from '../db/search-index';
import type { Tenant } from '../db/tenant';
import { tombstones } from '../db/tombstones';
import { ACTIVATION_PERIODS_SETTLED } from '../db/upgrades';
import { type ApplyOutcome, asStamp, version } from './event-time';
import { syncUserGroups } from './list-facts';
import { matchRules } from './membership-rules';
import { type UserFacts, userRecord, userTombstone } from './users';
import { deletedSince } from './versioned-records';

/**
 * What the batch did with one user: the outcome applying it as an event would have had, or
 * `per-event` when the batch left it alone and the caller must apply it as an event (one by one).
 */
export type BatchOutcome = ApplyOutcome | 'per-event';

/**
 * Registers many users of one organization at once, as registration events of `time` would
 * (upsert the user; if active, apply membership rules), for the users that no organization has
 * yet: those are plain inserts, and batching them turns ~5 round trips per user into a handful
 * per batch. Every other user (present here or elsewhere, tombstoned, or a second line for the
 * same id) is answered `per-event`: the per-event path alone knows event-time ordering, moves
 * between organizations and deletions, so the caller applies those with it, after this returns.
 * Returns one outcome per user of `batch`, in order.
 */
export async function registerNewUsers(tenant: Tenant, batch: readonly UserFacts[], time: string): Promise<BatchOutcome[]> {
  const firsts = firstLineOfEachId(batch);
  const { fresh, stones } = await usersToInsert(tenant, [...firsts.keys()], time);
  const inserted = await insertUsers(tenant, fresh, stones, time);
  await indexNewUsers(
    tenant,
    inserted.map((u) => userRecord(u, time).doc),
  );
  const memberships = await insertRuleMemberships(tenant, inserted);
  // Their activations' rules are applied: the claims the inserts made are done (docs/events.md).
  const activated = inserted.filter((u) => u.is_active).map((u) => String(u.id));
  if (activated.length > 0) {
    await tenant
      .collection<UserDoc>(COLLECTIONS.users)
      .updateBookkeeping({ _id: { $in: activated }, act_done: false } as Filter<UserDoc>, { $set: { act_done: true } }, { many: true });
  }
  // The memberships first, then the users' derived group from a fresh read, as per event (all of
  // them: a membership may predate its user). Two reads for the batch; writes only where it differs.
  await syncUserGroups(
    tenant,
    inserted.map((u) => u.id),
  );
  const retired = await retiredSince(tenant, inserted, time);
  await takeBackRetired(tenant, retired, memberships, time);
  const outcomes: BatchOutcome[] = batch.map(() => 'per-event');
  for (const u of inserted) outcomes[firsts.get(u)!] = retired.has(u.id) ? 'stale' : 'applied';
  return outcomes;
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

/**
 * The users worth a plain insert: those no organization has, with no tombstone here at least as
 * new as `time` (a retired user is the per-event path's: it decides what the deletion leaves).
 * One created meanwhile is caught by the insert, which refuses its `_id`.
 */
async function usersToInsert(tenant: Tenant, users: readonly UserFacts[], time: string) {
  const [known, stones] = await Promise.all([ownerLookup(tenant.db).userOrgs(users.map((u) => u.id)), tombstonesOf(tenant, users)]);
  return { fresh: users.filter((u) => !known.has(u.id) && !deletedSince(stones.get(userTombstone(u.id)), time)), stones };
}

function tombstonesOf(tenant: Tenant, users: readonly UserFacts[]) {
  return tombstones(tenant.db).getMany(users.map((u) => userTombstone(u.id)));
}

/**
 * The activation bookkeeping a user created again after its retirement starts with: a retirement
 * is a deactivation, and settles the activations before it (docs/events.md).
 */
function afterRetirement(stone: TombstoneDoc | undefined, own: string | null) {
  if (!stone) return {};
  const retired = version(stone.event_time, stone.event_n ?? 1);
  const [first, last] = own !== null && own > retired ? [retired, own] : own !== null ? [own, retired] : [retired, retired];
  return { deact_v: last, deact_min_v: first, act_min_v: ACTIVATION_PERIODS_SETTLED };
}

/** Inserts the users' records in one unordered insert; returns those inserted (a refused `_id` exists somewhere). */
async function insertUsers(tenant: Tenant, users: readonly UserFacts[], stones: Map<string, TombstoneDoc>, time: string): Promise<UserFacts[]> {
  // Each insert is a registration event of `time`: its version fields, and its activation claimed when active.
  const stamp = asStamp(time);
  const v = version(time, 1);
  const refused = await tenant.collection<UserDoc>(COLLECTIONS.users).insertMany(
    users.map((u) => ({
      ...userRecord(u, time).doc,
      event_n: 1,
      event_ids: [stamp.id],
      ...(u.is_active ? { act_v: v, act_done: false, act_seen_v: v, act_min_v: v } : { deact_v: v, deact_min_v: v }),
      // Created again after a retirement (an older one: newer ones are left to the per-event path).
      ...afterRetirement(stones.get(userTombstone(u.id)), u.is_active ? null : v),
    })),
  );
  return users.filter((u) => !refused.has(String(u.id)));
}

/**
 * applyMembershipRules for new users, at once: one matchRules for the batch, the ids
 * of all the memberships claimed in one `$inc`, and the memberships inserted in one unordered
 * insert. A user who is already a member keeps their membership: the primary key (the user id)
 * refuses the new one, whose id is then unused (ids may have gaps). Returns those created.
 */
async function insertRuleMemberships(tenant: Tenant, users: readonly UserFacts[]): Promise<MembershipDoc[]> {
  const matches = await matchRules(
    tenant,
    users.filter((u) => u.is_active),
  );
  if (matches.length === 0) return [];
  const last = await tenant.claimIds('memberships', matches.length);
  const docs = matches.map((m, i) => ({
    _id: String(m.user.id),
    id: last - matches.length + 1 + i,
    user: m.user.id,
    group: m.rule.group,
    automatic: true,
  }));
  const refused = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).insertMany(docs);
  return docs.filter((d) => !refused.has(d._id)).map((d) => ({ ...d, org: tenant.org }));
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
