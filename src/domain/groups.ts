import { withCause } from '../db/change-context';
import { COLLECTIONS, type GroupCourseDoc, type GroupDoc, type MembershipDoc, type RuleDoc } from '../db/collections';
import type { Tenant } from '../db/tenant';
import { writeIntents } from '../db/write-intents';
import { membersOf, syncCourseFacts, syncUserGroups, usersShowingGroup } from './list-facts';

/** Groups (docs/api.md, `course-access-groups`): a named set of learners of one organization, and its deletion's cascade. */

const groups = (tenant: Tenant) => tenant.collection<GroupDoc>(COLLECTIONS.groups);

/** Whether the organization has group `id` (a reference another record makes must exist). */
export const groupExists = (tenant: Tenant, id: number) => groups(tenant).has({ _id: String(id) });

/** Which of `ids` name groups that exist (group ids are never reused: the others were deleted). */
export async function liveGroups(tenant: Tenant, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const found = await groups(tenant)
    .find({ _id: { $in: [...new Set(ids)].map(String) } }, { projection: { _id: 1 } })
    .toArray();
  return new Set(found.map((g) => Number(g._id)));
}

/** A new group, with an id claimed for it. */
export async function createGroup(tenant: Tenant, input: { name: string; description: string }): Promise<GroupDoc> {
  const id = await tenant.nextId('groups');
  return groups(tenant).insertOne({ _id: String(id), id, ...input });
}

/** Renames or redescribes group `id`; null when the organization has no such group. */
export function updateGroup(tenant: Tenant, id: number, patch: { name?: string; description?: string }): Promise<GroupDoc | null> {
  return groups(tenant).findOneAndUpdate({ _id: String(id) }, { $set: patch });
}

/**
 * Deletes a group with its memberships, rules and course links (docs/api.md). Without
 * multi-document transactions the order matters: an intent first (src/db/write-intents.ts), then
 * dependents, and the list facts of the users and courses they touched derived again
 * (src/domain/list-facts.ts), so a crash leaves the group in place and a second DELETE finishes
 * the job; then the group; then one more sweep for a dependent created in between, which checked
 * the group before it went. A crash before that sweep leaves the intent, and the sweep of
 * abandoned writes (children.ts) runs it.
 */
export async function deleteGroup(tenant: Tenant, id: number): Promise<boolean> {
  if (!(await groupExists(tenant, id))) return false;
  const intents = writeIntents(tenant.db);
  const intent = await intents.open({ org: tenant.org, kind: 'group-deletion', target: String(id), courses: [] });
  await sweepGroup(tenant, id);
  const { deletedCount } = await groups(tenant).deleteOne({ _id: String(id) });
  await sweepGroup(tenant, id);
  await intents.close(intent);
  return deletedCount === 1;
}

/**
 * A deletion a process left half done (it died, or took longer than the lease): finished, as the
 * administrator asked. Running beside a deletion still under way is safe (each step deletes what
 * it finds), but that request then answers 404, as when two DELETEs meet.
 */
export async function finishGroupDeletion(tenant: Tenant, id: number): Promise<void> {
  await sweepGroup(tenant, id);
  await groups(tenant).deleteOne({ _id: String(id) });
  await sweepGroup(tenant, id);
}

/** What hangs off group `id` goes: memberships, rules, links; the users and courses they touched derived again. */
async function sweepGroup(tenant: Tenant, id: number): Promise<void> {
  const members = await membersOf(tenant, id);
  await Promise.all([
    withCause('cascade', () =>
      Promise.all([
        tenant.collection<MembershipDoc>(COLLECTIONS.memberships).deleteMany({ group: id }),
        tenant.collection<RuleDoc>(COLLECTIONS.rules).deleteMany({ group: id }),
      ]),
    ),
    deleteLinksOf(tenant, id),
  ]);
  // Users still showing the group too: a sync an earlier, interrupted delete did not finish.
  await syncUserGroups(tenant, [...members, ...(await usersShowingGroup(tenant, id))]);
}

/**
 * Deletes group `id`'s links a page at a time, each page's courses' list facts derived again after
 * its delete. A page deletes only links still on a course it read, so every link it deletes is on
 * a course it then derives: a link PATCHed into the group, or onto another course, after the page
 * was read is deleted, its course synced, with a later page (a sync of what was read before the
 * delete missed it, and the course kept `linked` with no link).
 */
async function deleteLinksOf(tenant: Tenant, id: number): Promise<void> {
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
  for (;;) {
    const page = await links
      .find({ group: id }, { projection: { _id: 1, course: 1 } })
      .limit(LINKS_PAGE)
      .toArray();
    if (page.length === 0) return;
    const courses = [...new Set(page.map((l) => l.course))];
    await withCause('cascade', () => links.deleteMany({ _id: { $in: page.map((l) => l._id) }, group: id, course: { $in: courses } }));
    await syncCourseFacts(tenant, courses);
  }
}

/** Links deleted per page of a group's deletion. */
const LINKS_PAGE = 1000;
