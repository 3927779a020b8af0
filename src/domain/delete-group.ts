import { withCause } from '../db/change-context';
import { COLLECTIONS, type GroupCourseDoc, type GroupDoc, type MembershipDoc, type RuleDoc } from '../db/collections';
import type { Tenant } from '../db/tenant';
import { coursesOf, membersOf, syncCourseFacts, syncUserGroups, usersShowingGroup } from './list-facts';

/**
 * Deletes a group with its memberships, rules and course links (SPEC section 3). Without
 * multi-document transactions the order matters: dependents first, and the list facts of the
 * users and courses they touched derived again (src/domain/list-facts.ts), so a crash leaves the
 * group in place and a second DELETE finishes the job; then the group; then one more sweep for
 * a dependent created in between.
 */
export async function deleteGroup(tenant: Tenant, id: number): Promise<boolean> {
  const sweep = async () => {
    const [members, courses] = await Promise.all([membersOf(tenant, id), coursesOf(tenant, id)]);
    await sweepRecords();
    // Users still showing the group too: a sync an earlier, interrupted delete did not finish.
    await syncUserGroups(tenant, [...members, ...(await usersShowingGroup(tenant, id))]);
    await syncCourseFacts(tenant, courses);
  };
  const sweepRecords = () =>
    withCause('cascade', () =>
      Promise.all([
        tenant.collection<MembershipDoc>(COLLECTIONS.memberships).deleteMany({ group: id }),
        tenant.collection<RuleDoc>(COLLECTIONS.rules).deleteMany({ group: id }),
        tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).deleteMany({ group: id }),
      ]),
    );
  const groups = tenant.collection<GroupDoc>(COLLECTIONS.groups);
  if (!(await groups.findOne({ _id: String(id) }, { projection: { _id: 1 } }))) return false;
  await sweep();
  const { deletedCount } = await groups.deleteOne({ _id: String(id) });
  await sweep();
  return deletedCount === 1;
}
