import { COLLECTIONS, type MembershipDoc } from '../db/collections';
import type { Tenant } from '../db/tenant';
import { doesNotExist, type FieldErrors, Invalid } from '../errors';
import { groupExists } from './groups';
import type { LearnerMembership } from './learner-fold';
import { applyLearnerEntry, userExists } from './learners';
import { placeKey } from './record-history';

/**
 * Administrators' memberships (docs/api.md, `memberships`). A membership is what the learner's
 * history folds to (docs/event-core.md): an administrator's change is an entry of that history,
 * placed after every event the learner has received, and the memberships collection is its
 * projection (learners.ts). So an older event arriving later cannot undo the change, a newer one
 * acts after it, and a change racing a retirement or a move is folded with it, never beside it.
 */

const ALREADY_MEMBER = 'This user already has a membership.';

const memberships = (tenant: Tenant) => tenant.collection<MembershipDoc>(COLLECTIONS.memberships);

async function checkGroup(tenant: Tenant, group: number | undefined, errors: FieldErrors) {
  if (group !== undefined && !(await groupExists(tenant, group))) errors.group = [doesNotExist(group)];
}

/**
 * The membership as it stands after the change (another administrator's change since may show),
 * or Invalid on `group` when there is none: the group was deleted meanwhile.
 */
async function membershipAfter(tenant: Tenant, user: number, group: number): Promise<MembershipDoc> {
  const doc = await memberships(tenant).findById(String(user));
  if (!doc) throw new Invalid({ group: [doesNotExist(group)] });
  return doc;
}

/** The membership a request named is not the learner's any more (deleted, or replaced by another): the request finds nothing. */
class NotThere extends Error {}
/** The learner already has the membership a creation asks for (a retried request): it stands. */
class AlreadyThere extends Error {}

/**
 * Sets (or, with `group` null, removes) user `user`'s membership as an administrator's change.
 * `check` refuses it on the learner's membership as read (each round of the compare-and-set reads again).
 */
async function changeMembership(
  tenant: Tenant,
  user: number,
  group: number | null,
  check: (current: LearnerMembership | null) => FieldErrors | null,
  move = false,
): Promise<void> {
  await applyLearnerEntry(tenant.db, user, null, (state) => {
    const errors = state.record?.org === tenant.org ? check(state.membership) : { user: [doesNotExist(user)] };
    if (errors) throw new Invalid(errors);
    // `move` too: a process of the release before reads a PATCH by it (and moves what its walk holds).
    const moved = move && state.membership ? { move: true as const, moved: { by: state.membership.by, born: state.membership.born } } : {};
    return { kind: 'admin', org: tenant.org, group, ...moved };
  });
}

/** An administrator's membership: Invalid on `user` or `group` when either is unknown here, or when the user already has a membership. */
export async function createMembership(tenant: Tenant, input: { user: number; group: number }): Promise<MembershipDoc> {
  const errors: FieldErrors = {};
  // Every field's refusal at once, as DRF gives them; the change checks the learner again as it writes.
  if (!(await userExists(tenant, input.user))) errors.user = [doesNotExist(input.user)];
  else if (await memberships(tenant).has({ _id: String(input.user) })) errors.user = [ALREADY_MEMBER];
  await checkGroup(tenant, input.group, errors);
  if (Object.keys(errors).length > 0) throw new Invalid(errors);
  await changeMembership(tenant, input.user, input.group, (current) => {
    if (current === null) return null;
    // The same request again, after a process died before the membership was written: it stands.
    if (current.by === 'admin' && current.group === input.group) throw new AlreadyThere();
    return { user: [ALREADY_MEMBER] };
  }).catch((err: unknown) => {
    if (!(err instanceof AlreadyThere)) throw err;
  });
  return membershipAfter(tenant, input.user, input.group);
}

/**
 * Whether `current` is the membership `doc` is (the one a request named by its id), not one made
 * since: the learner has held it without a break from no later than where `doc` began. A
 * membership begins where the fold made it (a move keeps that place), so a late older activation
 * of the same period that re-made it earlier is still it; one made after a break (a retirement,
 * a move away and back, a removal, a new period's rule) begins after `doc` did and is not.
 */
const isNamed = (current: LearnerMembership | null, doc: MembershipDoc) => current !== null && placeKey(current.born) <= (doc.born ?? '');

/**
 * Applies an administrator's change to membership `doc`, the one the request named: null when the
 * learner or that membership is gone meanwhile (another administrator deleted it, perhaps made
 * another: that one is left alone).
 */
async function changeNamed(tenant: Tenant, doc: MembershipDoc, group: number | null): Promise<true | null> {
  try {
    const named = (current: LearnerMembership | null) => {
      if (!isNamed(current, doc)) throw new NotThere();
      return null;
    };
    // A PATCH moves the membership (it keeps who made it and where it began); a DELETE removes it.
    await changeMembership(tenant, doc.user, group, named, group !== null);
    return true;
  } catch (err) {
    if (err instanceof NotThere || (err instanceof Invalid && 'user' in err.fields)) return null;
    throw err;
  }
}

/** Moves membership `id` to `patch.group` (Invalid when that group is unknown here); null when there is no membership `id`. */
export async function updateMembership(tenant: Tenant, id: number, patch: { group?: number }): Promise<MembershipDoc | null> {
  const errors: FieldErrors = {};
  await checkGroup(tenant, patch.group, errors);
  if (Object.keys(errors).length > 0) throw new Invalid(errors);
  const before = await memberships(tenant).findOne({ id });
  if (!before || patch.group === undefined) return before;
  if (!(await changeNamed(tenant, before, patch.group))) return null;
  return membershipAfter(tenant, before.user, patch.group);
}

/** An administrator deletes a membership by its public id. */
export async function deleteMembership(tenant: Tenant, filter: { id: number }): Promise<boolean> {
  const before = await memberships(tenant).findOne(filter);
  if (!before) return false;
  return (await changeNamed(tenant, before, null)) !== null;
}

/**
 * A membership `cag import-config` brings (another organization's export): an administrator's,
 * or a rule's (`automatic`), made only where the user has none. False when it was not made.
 */
export async function importMembership(tenant: Tenant, input: { user: number; group: number; automatic: boolean }): Promise<boolean> {
  try {
    await applyLearnerEntry(tenant.db, input.user, null, (state) => {
      if (state.record?.org !== tenant.org || state.membership !== null) throw new Invalid({ user: [ALREADY_MEMBER] });
      return { kind: 'admin', org: tenant.org, group: input.group, ...(input.automatic ? { auto: true as const } : {}) };
    });
  } catch (err) {
    if (err instanceof Invalid) return false;
    throw err;
  }
  const doc = await memberships(tenant).findById(String(input.user));
  return doc?.group === input.group;
}
