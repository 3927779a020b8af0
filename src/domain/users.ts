import { withCause } from '../db/change-context';
import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../db/collections';
import { ownerLookup, Tenant } from '../db/tenant';
import type { ApplyOutcome } from './event-time';
import { syncUserGroups } from './list-facts';
import { indexUser, unindexUser } from './search-index';
import { recordDeletion, upsertIfNewer } from './versioned-records';

/** A user as the LMS describes it (the `user` of the user events, flattened). */
export interface UserFacts {
  id: number;
  username: string;
  name: string;
  email: string;
  is_active: boolean;
  /** Absent: unknown to the sender, so an existing record keeps its value (a new one gets false). */
  is_staff?: boolean;
  is_site_admin?: boolean;
}

export const userTombstone = (id: number) => `user:${id}`;

/**
 * The record an event writes for a user as of `time`: the whole document for a new user, and the
 * fields it changes on an existing one (flags the event does not carry are left as they are).
 * The per-event upsert and the import's batch insert (import-users.ts) both write this.
 */
export function userRecord(facts: UserFacts, time: string): { doc: Omit<UserDoc, 'org'>; set: Partial<UserDoc> } {
  const profile = {
    id: facts.id,
    username: facts.username,
    name: facts.name,
    email: facts.email,
    email_lower: facts.email.toLowerCase(),
    is_active: facts.is_active,
    event_time: time,
  };
  const flags = {
    ...(facts.is_staff === undefined ? {} : { is_staff: facts.is_staff }),
    ...(facts.is_site_admin === undefined ? {} : { is_site_admin: facts.is_site_admin, listed: (facts.is_site_admin ? 0 : 1) as 0 | 1 }),
  };
  // A new user has no membership yet: its list facts start empty and are derived after the write.
  const listFacts = { listed: 1, grp: 0, member: 0, facts_v: 0 } as const;
  return {
    doc: { _id: String(facts.id), ...profile, is_staff: false, is_site_admin: false, ...listFacts, ...flags },
    set: { ...profile, ...flags },
  };
}

/**
 * Records a user in the tenant's organization as of `time` (normalized, see event-time.ts),
 * unless the record already reflects a newer event. `current` is the record as it now stands
 * (null when a newer deletion wins), in whichever organization holds it.
 */
export async function upsertUser(tenant: Tenant, facts: UserFacts, time: string): Promise<{ outcome: ApplyOutcome; current: UserDoc | null }> {
  const { doc, set } = userRecord(facts, time);
  const result = await upsertIfNewer<UserDoc>(tenant, {
    collection: COLLECTIONS.users,
    doc,
    set,
    tombstone: userTombstone(facts.id),
    ownerOrg: () => ownerLookup(tenant.db).userOrg(facts.id),
    // A membership belongs to a group of the old organization: it does not travel.
    moveOut: async (old) => {
      await withCause('cascade', () => old.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: String(facts.id) }));
      await unindexUser(old, facts.id);
    },
  });
  // Every event re-derives what is derived from the record (also a duplicate or a stale one: so a
  // redelivery repairs what a crash after the write left undone).
  if (result.current) await reindexUser(result.current.org === tenant.org ? tenant : new Tenant(tenant.db, result.current.org), result.current);
  return result;
}

/** The user's list facts (from its membership) and search grams (from its record), derived again. */
export async function reindexUser(tenant: Tenant, user: UserDoc): Promise<void> {
  await syncUserGroups(tenant, [user.id]);
  await indexUser(tenant, user);
}

/**
 * Deletes a retired user and their membership (SPEC section 5), wherever the user is, and
 * leaves a tombstone in the organization so an older event cannot bring the user back. A user
 * record newer than the retirement (an id the LMS used again) is left alone.
 */
export async function retireUser(tenant: Tenant, userId: number, time: string): Promise<ApplyOutcome> {
  const owner = (await ownerLookup(tenant.db).userOrg(userId)) ?? tenant.org;
  const home = owner === tenant.org ? tenant : new Tenant(tenant.db, owner);
  const tombstoned = await recordDeletion(home, userTombstone(userId), time);
  const users = home.collection<UserDoc>(COLLECTIONS.users);
  const memberships = home.collection<MembershipDoc>(COLLECTIONS.memberships);
  const user = await users.findById(String(userId), { projection: { event_time: 1 } });
  if (user && user.event_time > time) return 'stale';
  // Membership first: a crash in between leaves the user, and the redelivered event finishes.
  let deleted = (await memberships.deleteOne({ _id: String(userId) })).deletedCount;
  if (user) deleted += (await users.deleteOne({ _id: String(userId), event_time: { $lte: time } })).deletedCount;
  await unindexUser(home, userId, time);
  if (deleted > 0) return 'applied';
  return tombstoned;
}
