import { COLLECTIONS, type MembershipDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { syncUserGroups } from './list-facts';
import { settlePendingActivation } from './users';

/**
 * Creates a user's membership unless they already have one; returns it, or null when one exists.
 *
 * The membership's `_id` is the user id, so "at most one membership per user" is the primary
 * key and two concurrent creations (two deliveries of one event, or an admin racing a rule)
 * cannot both succeed: the loser gets E11000, which is read as "already a member". This is the
 * only place memberships are created, for the REST API and membership rules alike.
 */
export async function insertMembershipIfAbsent(tenant: Tenant, input: { user: number; group: number; automatic: boolean }): Promise<MembershipDoc | null> {
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
  if (!input.automatic) await settlePendingActivation(tenant, input.user);
  return created;
}

/** Moves a membership to another group, then derives the user's group again. */
export async function moveMembership(tenant: Tenant, id: number, group: number): Promise<MembershipDoc | null> {
  const doc = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOneAndUpdate({ id }, { $set: { group } });
  if (doc) await Promise.all([syncUserGroups(tenant, [doc.user]), settlePendingActivation(tenant, doc.user)]);
  return doc;
}

/** Deletes a membership by its public id, then derives the user's group again. */
export async function deleteMembership(tenant: Tenant, filter: { id: number } | { _id: string; id: number }): Promise<boolean> {
  const doc = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOneAndDelete(filter);
  if (doc) await Promise.all([syncUserGroups(tenant, [doc.user]), settlePendingActivation(tenant, doc.user)]);
  return doc !== null;
}
