import type { Db, Filter } from 'mongodb';
import { COLLECTIONS, type EventVersion, type MembershipDoc, type PriorEvent, type TombstoneDoc, type UserDoc } from '../db/collections';
import { ownerLookup } from '../db/owners';
import { indexUser, unindexUser } from '../db/search-index';
import { Tenant } from '../db/tenant';
import { logEntry, withEntry, withEntryMoved, withRecordAt, withRemoval } from './activation-log';
import { type ApplyOutcome, asStamp, type EventStamp, lateVersion, version } from './event-time';
import { syncUserGroups } from './list-facts';
import {
  announceDeletion,
  bornUpTo,
  deleteIfNewer,
  finishDeletionOfGone,
  namedByTombstone,
  ROUNDS,
  recordVersion,
  replaceEarlier,
  upsertIfNewer,
  type VersionedRecordRef,
  type VersionedResult,
  type VersionFields,
} from './versioned-records';

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
    deleteDependents: async (home, upTo) => {
      await home.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: String(id), ...bornUpTo(upTo) } as Filter<MembershipDoc>);
      await unindexUser(home, id);
    },
    rederive: (home, record) => reindexUser(home, record as UserDoc),
  };
}

/** Finishes a retirement of user `id` (its tombstone `stone`) whose process died before deleting the membership: versioned-records.ts. */
export const finishRetirement = (db: Db, id: number, stone: TombstoneDoc) => finishDeletionOfGone(db, userRef(db, id), String(id), stone);

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
 * What a version `v` of a user event writes in the activation log (docs/events.md): its entry
 * (activation-log.ts `logEntry`), appended (an applied event is the record's newest); a record
 * that follows a deletion or a move (`after`) starts after it, as after a removal. A new record
 * has a log count even without an entry (`log_n: 0`, which counts as absent everywhere): a user
 * with neither log nor count is of the shape before the log, which the upgrade (src/db/upgrades.ts)
 * gives a floor; one written now must never get it. (A count, not an empty log: FerretDB v1
 * drops an empty array from `$setOnInsert`.)
 */
export function activationFields(facts: Pick<UserFacts, 'is_active' | 'email'>, activates: boolean, id: string, untimed = false) {
  return (v: string, after: EventVersion | null): VersionFields => {
    const entry = logEntry(facts, activates, v, id, untimed);
    // The events of the removal's time stay named (activation-log.ts `withRemoval`); FerretDB v1 drops an empty array here.
    const removed = after === null ? {} : { removed_v: recordVersion(after), ...(after.event_ids?.length ? { removed_i: after.event_ids } : {}) };
    const onInsert = { ...(entry ? {} : { log_n: 0 }), ...removed };
    return {
      ...(entry ? { push: { act_log: entry }, inc: { log_n: 1 } } : {}),
      ...(Object.keys(onInsert).length > 0 ? { onInsert } : {}),
    };
  };
}

/** Whether the learner's newest event was an activation: its log has an activation at the record's version. */
const wasActivation = (u: UserDoc) => (u.act_log ?? []).some((e) => e.k === 'a' && e.v === recordVersion(u));

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
    fields: activationFields(facts, activates, stamp.id, stamp.provisional),
    ...(activates ? { kept: { act: true as const } } : {}),
    keptOf: (u) => (wasActivation(u) ? { act: true as const } : {}),
  });
  // A stale event still has its place in event time: its entry, or, naming another organization
  // (the learner was elsewhere then: a move and a move back), a removal.
  // It is late (lateVersion): after every event of its time the record saw, in arrival order.
  if (result.current && result.outcome === 'stale') {
    const late = (u: UserDoc) => lateVersion(stamp.time, u.log_n ?? 0);
    const moved = result.current.org !== tenant.org;
    const change = moved
      ? (u: UserDoc) => withRemoval(u, late(u), stamp.id)
      : (u: UserDoc) => {
          const entry = logEntry(facts, activates, late(u), stamp.id, stamp.provisional);
          return entry && withEntry(u, entry);
        };
    if (moved || logEntry(facts, activates, result.version, stamp.id)) {
      result.current = await changeActivationLog(homeOf(tenant, result.current), result.current, change);
    }
  }
  // Every event re-derives what is derived from the record (also a duplicate or a stale one: so a
  // redelivery repairs what a crash after the write left undone).
  if (result.current) await reindexUser(homeOf(tenant, result.current), result.current);
  return result;
}

/**
 * Writes a change of the user's activation log (`change` of the record as read; null: none), on
 * the condition that the log is as read (`log_n`), reading again on a lost race. Returns the
 * record as it then stands.
 */
export async function changeActivationLog(tenant: Tenant, user: UserDoc, change: (u: UserDoc) => Partial<UserDoc> | null): Promise<UserDoc> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  let current: UserDoc | null = user;
  for (let round = 0; round < ROUNDS && current; round++) {
    const fields = change(current);
    if (!fields) return current;
    const asRead = { _id: current._id, log_n: current.log_n ?? { $exists: false } } as Filter<UserDoc>;
    // A field given as undefined is removed (a floor a removal made pointless).
    const set = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
    const cleared = Object.keys(fields).filter((k) => !(k in set));
    const unset = cleared.length > 0 ? { $unset: Object.fromEntries(cleared.map((k) => [k, '' as const])) } : {};
    // No field: the log is as it was, but what reads it changed (a lowered `admin_v`): raised all the same.
    const written = Object.keys(set).length > 0 ? { $set: set } : {};
    if (await users.updateBookkeeping(asRead, { ...written, ...unset, $inc: { log_n: 1 } })) return (await users.findById(current._id)) ?? current;
    current = await users.findById(current._id);
  }
  if (!current) return user;
  throw new Error(`activation log of user ${user.id} kept changing`);
}

/**
 * An administrator's change to a user's membership (create, move, delete), written before the
 * change itself: it places the change in event time (`admin_v`: the record's version now), so
 * that no activation older than it changes the membership (docs/events.md). A reconciliation
 * running meanwhile read the membership before the user (membership-rules.ts): without the mark,
 * its write is conditional on a membership read before the change, and loses to it. Returns that
 * version (null: no such user).
 */
export async function placeAdminChange(tenant: Tenant, userId: number): Promise<string | null> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const user = await users.findById(String(userId), { projection: { event_time: 1, event_n: 1 } });
  if (!user) return null;
  const at = recordVersion(user);
  await users.updateBookkeeping({ _id: String(userId) } as Filter<UserDoc>, { $max: { admin_v: at } });
  return at;
}

/**
 * Places again user event `eventId`, which has no `time`, at `to` (its earliest Kafka timestamp
 * moved back from `from`: src/db/event-times.ts): the record becomes what event time gives
 * (versioned-records.ts `replaceEarlier`; an administrator's change placed right after the
 * event follows it), and its activation log entry moves to `to`. Returns the record's
 * organization and record (null: none holds it); the caller reconciles the membership.
 */
export async function replaceUserEvent(
  db: Db,
  userId: number,
  eventId: string,
  from: string,
  to: string,
): Promise<{ home: Tenant; record: UserDoc; deletion: EventStamp | null; elsewhere: PriorEvent[] } | null> {
  let lowered = false;
  const placed = await replaceEarlier<UserDoc>(db, userRef(db, userId), String(userId), eventId, from, to, (u, after) => {
    lowered = u.admin_v !== undefined && u.admin_v === recordVersion(u) && after !== u.admin_v;
    return lowered ? { admin_v: after } : {};
  });
  if (!placed) return null;
  const { home } = placed;
  const applied = placed.record.event_time === to && placed.record.event_ids?.includes(eventId);
  // Not applied there (the record is newer): late, as a stale event's entry is.
  const entryVersion = (u: UserDoc) => (applied ? version(to, placed.record.event_n ?? 1) : lateVersion(to, u.log_n ?? 0));
  const record = await changeActivationLog(home, placed.record, (u) => {
    const moved = withEntryMoved(u, eventId, entryVersion(u));
    const own = withRecordAt({ ...u, ...moved }, recordVersion(u));
    return own ? { ...moved, ...own } : (moved ?? (lowered ? {} : null));
  });
  await reindexUser(home, record);
  // A retirement refused meanwhile, newer than the event now: the caller retires the learner after all, once the membership follows the log.
  return { home, record, deletion: placed.deletion, elsewhere: placed.elsewhere };
}

/** The learner a kept event (versioned-records.ts `PriorEvent`) described, to apply it again. */
export function keptFacts(userId: number, p: PriorEvent): UserFacts {
  const set = p.set as Partial<UserDoc>;
  return {
    id: userId,
    username: String(set.username),
    name: String(set.name),
    email: String(set.email),
    is_active: set.is_active === true,
    ...(set.is_staff === undefined ? {} : { is_staff: set.is_staff }),
    ...(set.is_site_admin === undefined ? {} : { is_site_admin: set.is_site_admin }),
  };
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
  // A retirement older than the record (the learner came back after it) is a removal in its
  // past: the membership begun before it goes (membership-rules.ts reconcileMembership).
  // It comes after the events of its time the record applied (the tie rule), unless it is one of
  // them: a retirement applied at that time, delivered again, is named by the tombstone.
  if (survivor && outcome !== 'duplicate' && !(await namedByTombstone(tenant.db, userTombstone(userId), stamp))) {
    const user = await survivor.home.collection<UserDoc>(COLLECTIONS.users).findById(String(userId));
    if (user) await changeActivationLog(survivor.home, user, (u) => withRemoval(u, lateVersion(stamp.time, u.log_n ?? 0), stamp.id));
  }
  if (outcome === 'duplicate') await announceDeletion(tenant.db, userTombstone(userId), COLLECTIONS.users, String(userId));
  return outcome;
}
