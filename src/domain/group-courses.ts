import { COLLECTIONS, type GroupCourseDoc } from '../db/collections';
import { refusingDuplicates } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { Conflict, doesNotExist, type FieldErrors, Invalid } from '../errors';
import { deleteById, dropSecondDocuments } from './by-id';
import { createChild, hangOff } from './children';
import { courseBirth } from './courses';
import { groupExists } from './groups';
import { syncCourseFacts } from './list-facts';

/**
 * Group-course links (docs/api.md, `group-courses`): a course linked to a group. A (course,
 * group) pair is linked at most once (a unique index). Every write derives the course's list
 * facts again (src/domain/list-facts.ts).
 */

const notUnique = () => new Conflict({ non_field_errors: ['The fields course, group must make a unique set.'] });
const links = (tenant: Tenant) => tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);

/**
 * Invalid on `course` and/or `group` when they are given and unknown in this organization;
 * else where a link to the course made now begins (courses.ts `courseBirth`), when given.
 */
async function checkReferences(tenant: Tenant, input: { course?: string; group?: number }): Promise<string | undefined> {
  const errors: FieldErrors = {};
  const [course, groupOk] = await Promise.all([
    input.course === undefined ? undefined : courseBirth(tenant, input.course),
    input.group === undefined || groupExists(tenant, input.group),
  ]);
  if (course === null) errors.course = [doesNotExist(input.course)];
  if (!groupOk) errors.group = [doesNotExist(input.group)];
  if (Object.keys(errors).length > 0) throw new Invalid(errors);
  return course ?? undefined;
}

export async function createGroupCourse(tenant: Tenant, input: { course: string; group: number }): Promise<GroupCourseDoc> {
  const born = (await checkReferences(tenant, input))!;
  // Checked first so that a refused request claims no id.
  if (await links(tenant).has({ course: input.course, group: input.group })) throw notUnique();
  const id = await tenant.nextId('group_courses');
  // Written under its course and its group (children.ts): one deleted or moved meanwhile takes it back, and is one that does not exist.
  const parents = { course: { key: input.course, born }, group: input.group };
  return createChild(tenant, { kind: 'link', id: String(id), courses: [input.course], parents }, () =>
    refusingDuplicates(() => links(tenant).insertOne({ _id: String(id), id, course: input.course, group: input.group, born }), notUnique),
  );
}

/**
 * One write of the link's one document, found by its id (docs/decisions.md, "Links and rules by
 * id"): the pair's uniqueness is the `{org, group, course}` index's. A link given its course
 * begins there now, as a created one does. Null: no link `id` here (or a DELETE of it came first).
 */
export async function updateGroupCourse(tenant: Tenant, id: number, patch: { course?: string; group?: number }): Promise<GroupCourseDoc | null> {
  // The id first (404 before 400, as DRF's get_object before its serializer).
  const read = await links(tenant).findOne({ id });
  if (!read) return null;
  const doubled = await dropSecondDocuments(tenant, COLLECTIONS.groupCourses, read);
  if (doubled.length > 0)
    await syncCourseFacts(
      tenant,
      doubled.map((l) => l.course),
    );
  const born = await checkReferences(tenant, patch);
  // Already so as read: nothing is written (and no change published), as had it come first.
  if ((patch.course ?? read.course) === read.course && (patch.group ?? read.group) === read.group) return read;
  // Every field named, even one that was already so: another PATCH may change it before this write.
  const set = {
    ...(patch.course === undefined ? {} : { course: patch.course, born: born! }),
    ...(patch.group === undefined ? {} : { group: patch.group }),
  };
  // Written under both parents (children.ts; another PATCH may have changed the other one
  // meanwhile): on a course or group whose deletion (or move) swept meanwhile, the link goes with
  // it, as had the deletion come after (the PATCH answers what it wrote). Written only while the
  // link is on a course the intent names (the one read, or the one it goes to), so the sweep
  // derives the course it leaves, whenever the process dies; moved elsewhere since by another
  // PATCH, it is read again and the PATCH starts over.
  const ref = { kind: 'link' as const, id: read._id, courses: [...new Set([read.course, patch.course ?? read.course])], parents: {} };
  const { result: before } = await hangOff(tenant, ref, () =>
    refusingDuplicates(() => links(tenant).findOneAndUpdate({ id, course: { $in: ref.courses } }, { $set: set }, { returnDocument: 'before' }), notUnique),
  );
  if (before) return { ...before, ...set };
  return updateGroupCourse(tenant, id, patch);
}

/** Deletes the link: one write (of two DELETEs at once, one answers 404). */
export async function deleteGroupCourse(tenant: Tenant, id: number): Promise<boolean> {
  const deleted = await deleteById<GroupCourseDoc>(tenant, COLLECTIONS.groupCourses, id);
  await syncCourseFacts(
    tenant,
    deleted.map((l) => l.course),
  );
  return deleted.length > 0;
}
