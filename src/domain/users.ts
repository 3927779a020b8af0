import type { Db, Filter } from 'mongodb';
import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../db/collections';
import { ownerLookup } from '../db/owners';
import { indexUser, unindexUser } from '../db/search-index';
import { Tenant } from '../db/tenant';
import { ACTIVATION_PERIODS_SETTLED } from '../db/upgrades';
import { type ApplyOutcome, asStamp, type EventStamp, version } from './event-time';
import { syncUserGroups } from './list-facts';
import { announceDeletion, deleteIfNewer, recordVersion, upsertIfNewer, type VersionedRecordRef, type VersionedResult } from './versioned-records';

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
 * Where user `id` is and what hangs off it: its membership (which belongs to a group of its
 * organization, so it neither travels with a move nor outlives a retirement) and its search grams.
 */
function userRef(db: Db, id: number): VersionedRecordRef {
  return {
    collection: COLLECTIONS.users,
    tombstone: userTombstone(id),
    ownerOrg: () => ownerLookup(db).userOrg(id),
    deleteDependents: async (home) => {
      await home.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: String(id) });
      await unindexUser(home, id);
    },
  };
}

/** Whether the organization has user `id`, site administrators included (a membership may name one). */
export const userExists = (tenant: Tenant, id: number) => tenant.collection<UserDoc>(COLLECTIONS.users).has({ _id: String(id) });

/**
 * The record an event writes for a user as of `time`: the whole document for a new user, and the
 * fields it changes on an existing one (flags the event does not carry are left as they are).
 * The per-event upsert and the import's batch insert (import-users.ts) both write this; the
 * version fields (event_n, event_ids) are versioned-records.ts's.
 */
export function userRecord(facts: UserFacts, time: string): { doc: Omit<UserDoc, 'org' | 'event_n' | 'event_ids'>; set: Partial<UserDoc> } {
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
 * The activation bookkeeping a version `v` of a user event writes (docs/events.md): an event
 * showing the learner inactive raises `deact_v`, and so does what a new record follows (a
 * retirement, a record moved away); a record created by an activation-capable event claims its
 * activation at once. A record that follows a retirement or a move settles the activations before
 * them: what they made was deleted with the record it follows.
 */
export function activationFields(facts: Pick<UserFacts, 'is_active' | 'email'>, activates: boolean) {
  return (v: string, after: string | null) => {
    const deacts = [after, facts.is_active ? null : v].filter((x): x is string => x !== null).sort();
    const max = { ...(deacts.length > 0 ? { deact_v: deacts.at(-1)! } : {}), ...(activates ? { act_seen_v: v } : {}) };
    const act_min_v = after !== null ? ACTIVATION_PERIODS_SETTLED : activates ? v : null;
    const onInsert = { ...(activates ? { act_v: v, act_done: false, act_email: facts.email } : {}), ...(act_min_v !== null ? { act_min_v } : {}) };
    return {
      ...(activates ? { set: { act_seen_email: facts.email } } : {}),
      ...(Object.keys(max).length > 0 ? { max } : {}),
      ...(deacts.length > 0 ? { min: { deact_min_v: deacts[0]! } } : {}),
      ...(Object.keys(onInsert).length > 0 ? { onInsert } : {}),
    };
  };
}

/**
 * True when an activation of version `v`, older than every deactivation the record knows (it
 * arrived after them), falls in the learner's first activation period and no activation of that
 * period claimed the rules: in event time it came first and applied them (docs/events.md). An
 * activation between two deactivations is not decided here: the record keeps only the first and
 * the last of them.
 */
export function isLateFirstActivation(user: Pick<UserDoc, 'deact_min_v' | 'act_min_v' | 'act_v'>, v: string): boolean {
  if (user.deact_min_v === undefined || v >= user.deact_min_v) return false;
  // No act_min_v: no activation was ever claimed (a record kept without it is marked at start: src/db/upgrades.ts).
  return user.act_min_v === undefined ? user.act_v === undefined : user.act_min_v > user.deact_min_v;
}

/** True when an activation of version `v` is one whose rules are not applied yet (docs/events.md). */
export function isNewActivation(user: Pick<UserDoc, 'is_active' | 'act_v' | 'deact_v'>, v: string): boolean {
  const deact = user.deact_v ?? '';
  return user.is_active && v > deact && !(user.act_v !== undefined && user.act_v > deact);
}

/**
 * Records a user in the tenant's organization as of `at` (docs/events.md), unless the record
 * already reflects it or a newer event. `activates`: the event is activation-capable and shows
 * the learner active. `current` is the record as it now stands (null when a newer deletion
 * wins), in whichever organization holds it; `version` the event's.
 */
export async function upsertUser(tenant: Tenant, facts: UserFacts, at: string | EventStamp, activates = false): Promise<VersionedResult<UserDoc>> {
  const stamp = asStamp(at);
  const { doc, set } = userRecord(facts, stamp.time);
  const result = await upsertIfNewer<UserDoc>(tenant, {
    doc,
    set,
    at: stamp,
    ...userRef(tenant.db, facts.id),
    fields: activationFields(facts, activates),
  });
  // A stale event showing the learner inactive is still a deactivation (the activation rules ask
  // for the newest one, and a late activation for the oldest one). So is a stale event of another
  // organization: in event time the learner left for it, and came back; what activations before
  // it made went with that move (settled, and see takeBackMembershipBefore).
  const elsewhere = result.current !== null && result.outcome === 'stale' && result.current.org !== tenant.org;
  if (
    result.current &&
    result.outcome === 'stale' &&
    (!facts.is_active || elsewhere) &&
    ((result.current.deact_v ?? '') < result.version || (result.current.deact_min_v ?? '') > result.version || elsewhere)
  ) {
    const users = homeOf(tenant, result.current).collection<UserDoc>(COLLECTIONS.users);
    await users.updateBookkeeping({ _id: result.current._id } as Filter<UserDoc>, {
      $max: { deact_v: result.version },
      $min: { deact_min_v: result.version, ...(elsewhere ? { act_min_v: ACTIVATION_PERIODS_SETTLED } : {}) },
    });
    // Read again: the activation rules decide on the bookkeeping as it now stands.
    result.current = (await users.findById(result.current._id)) ?? result.current;
  }
  // Every event re-derives what is derived from the record (also a duplicate or a stale one: so a
  // redelivery repairs what a crash after the write left undone).
  if (result.current) await reindexUser(homeOf(tenant, result.current), result.current);
  return result;
}

/**
 * An administrator's change to a user's membership (create, move, delete), written before the
 * change itself: it settles any activation of that user still pending (docs/events.md), so that
 * finishing it later cannot undo the change, and places the change in event time (`admin_v`:
 * the record's version now), so that a late activation older than it leaves it standing. A rule
 * racing the change reads the mark after its own write (membership-rules.ts reapplyRules).
 * Returns that version (null: no such user).
 */
export async function settlePendingActivation(tenant: Tenant, userId: number): Promise<string | null> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const user = await users.findById(String(userId), { projection: { event_time: 1, event_n: 1 } });
  if (!user) return null;
  const at = recordVersion(user);
  await users.updateBookkeeping({ _id: String(userId) } as Filter<UserDoc>, { $set: { act_done: true }, $max: { admin_v: at } });
  return at;
}

/** The tenant of the organization that holds `record` (the one asked about, or the one it moved to). */
export const homeOf = (tenant: Tenant, record: { org: string }) => (record.org === tenant.org ? tenant : new Tenant(tenant.db, record.org));

/**
 * The user's list facts (from its membership) and search grams (from its record), derived again;
 * then the record says its grams are those of its version (`indexed_t`), unless it already did.
 */
async function reindexUser(tenant: Tenant, user: UserDoc): Promise<void> {
  await syncUserGroups(tenant, [user.id]);
  await indexUser(tenant, user);
  if (user.indexed_t === user.event_time) return;
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  if (await users.updateBookkeeping({ _id: user._id, event_time: user.event_time } as Filter<UserDoc>, { $set: { indexed_t: user.event_time } })) {
    user.indexed_t = user.event_time; // the record the caller holds, as stored
  }
}

/**
 * Deletes a retired user and their membership (docs/events.md), wherever the user is, and
 * leaves a tombstone (by user id, whatever the organization) so an older or redelivered event
 * cannot bring the user back. A user record newer than the retirement (an id the LMS used again)
 * is left alone.
 */
export async function retireUser(tenant: Tenant, userId: number, at: string | EventStamp): Promise<ApplyOutcome> {
  const stamp = asStamp(at);
  const { outcome, survivor } = await deleteIfNewer(tenant.db, { ...userRef(tenant.db, userId), id: String(userId), at: stamp, org: tenant.org });
  // A retirement older than the record still counts as a deactivation (docs/events.md): an
  // activation older than it, arriving later, applies no rule (what it made, the retirement deleted).
  if (survivor) {
    const retired = version(stamp.time, 0);
    await survivor.home.collection<UserDoc>(COLLECTIONS.users).updateBookkeeping({ _id: String(userId) } as Filter<UserDoc>, {
      $max: { deact_v: retired },
      $min: { deact_min_v: retired, act_min_v: ACTIVATION_PERIODS_SETTLED },
    });
  }
  if (outcome === 'duplicate') await announceDeletion(tenant.db, userTombstone(userId), COLLECTIONS.users, String(userId));
  return outcome;
}
