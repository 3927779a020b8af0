import type { Filter } from 'mongodb';
import { COLLECTIONS, type MembershipDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { Conflict, doesNotExist, type FieldErrors, Invalid } from '../errors';
import { groupExists } from './groups';
import { syncUserGroups } from './list-facts';
import { placeAdminChange, userExists } from './users';

const ALREADY_MEMBER = 'This user already has a membership.';

async function checkGroup(tenant: Tenant, group: number | undefined, errors: FieldErrors) {
  if (group !== undefined && !(await groupExists(tenant, group))) errors.group = [doesNotExist(group)];
}

/** An administrator's membership: Invalid on `user` or `group` when either is unknown here, or when the user already has a membership. */
export async function createMembership(tenant: Tenant, input: { user: number; group: number }): Promise<MembershipDoc> {
  const errors: FieldErrors = {};
  if (!(await userExists(tenant, input.user))) errors.user = [doesNotExist(input.user)];
  // Checked before inserting, so a refused request claims no id; the insert's own duplicate
  // check still settles a race with a concurrent creation.
  else if (await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).has({ _id: String(input.user) })) errors.user = [ALREADY_MEMBER];
  await checkGroup(tenant, input.group, errors);
  if (Object.keys(errors).length > 0) throw new Invalid(errors);
  const at = await placeAdminChange(tenant, input.user);
  const doc = await insertMembershipIfAbsent(tenant, { user: input.user, group: input.group, automatic: false, ...(at === null ? {} : { born_v: at }) });
  if (!doc) throw new Conflict({ user: [ALREADY_MEMBER] });
  return doc;
}

/** Moves membership `id` to `patch.group` (Invalid when that group is unknown here); null when there is no membership `id`. */
export async function updateMembership(tenant: Tenant, id: number, patch: { group?: number }): Promise<MembershipDoc | null> {
  const errors: FieldErrors = {};
  await checkGroup(tenant, patch.group, errors);
  if (Object.keys(errors).length > 0) throw new Invalid(errors);
  return patch.group === undefined ? tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ id }) : moveMembership(tenant, id, patch.group);
}

/**
 * Creates a user's membership unless they already have one; returns it, or null when one exists.
 *
 * The membership's `_id` is the user id, so "at most one membership per user" is the primary
 * key and two concurrent creations (two deliveries of one event, or an admin racing a rule)
 * cannot both succeed: the loser gets E11000, which is read as "already a member". This is the
 * only place memberships are created, for the REST API and membership rules alike.
 */
export async function insertMembershipIfAbsent(
  tenant: Tenant,
  input: { user: number; group: number; automatic: boolean; rule_v?: string; born_v?: string },
): Promise<MembershipDoc | null> {
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);
  // A look first spares an id for an existing member (the usual case of a redelivery); the
  // insert still settles a race, at the cost of an unused id (gaps are allowed).
  if (await memberships.findById(String(input.user), { projection: { _id: 1 } })) return null;
  const id = await tenant.nextId('memberships');
  let created: MembershipDoc;
  try {
    created = await memberships.insertOne({ _id: String(input.user), id, ...input });
  } catch (err) {
    if (isDuplicateKey(err)) return null;
    throw err;
  }
  // The membership first, then the user's derived group from a fresh read (src/domain/list-facts.ts).
  await syncUserGroups(tenant, [input.user]);
  return created;
}

/** Moves a membership to another group (an administrator's now, no rule's), then derives the user's group again. */
export async function moveMembership(tenant: Tenant, id: number, group: number): Promise<MembershipDoc | null> {
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);
  const before = await memberships.findOne({ id });
  if (!before) return null;
  await placeAdminChange(tenant, before.user);
  const doc = await memberships.findOneAndUpdate({ id }, { $set: { group }, $unset: { rule_v: '' } });
  if (doc) await syncUserGroups(tenant, [doc.user]);
  return doc;
}

/** An administrator deletes a membership by its public id; the user's group is derived again. */
export async function deleteMembership(tenant: Tenant, filter: { id: number }): Promise<boolean> {
  const before = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne(filter);
  if (!before) return false;
  await placeAdminChange(tenant, before.user);
  return (await removeMembership(tenant, filter)) !== null;
}

/**
 * Deletes the membership `filter` matches (a rule taking back its own, or one made at an
 * activation that turned out not to be its period's first), then derives the user's group again.
 */
export async function removeMembership(tenant: Tenant, filter: Filter<MembershipDoc>): Promise<MembershipDoc | null> {
  const doc = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOneAndDelete(filter);
  if (doc) await syncUserGroups(tenant, [doc.user]);
  return doc;
}
