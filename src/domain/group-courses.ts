import { COLLECTIONS, type GroupCourseDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { Conflict, doesNotExist, type FieldErrors, Invalid } from '../errors';
import { courseBirth, courseHolds } from './courses';
import { groupExists } from './groups';
import { syncCourseFacts } from './list-facts';
import { deleteKeyed, finishIfDeleted, replaceKeyed } from './rekey';

/**
 * Group-course links (docs/api.md, `group-courses`): a course linked to a group. A (course,
 * group) pair is linked at most once: it is the document's `_id`. Every write derives the
 * course's list facts again (src/domain/list-facts.ts).
 */

const linkKey = (course: string, group: number) => `${course}|${group}`;
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

/**
 * Inserts a link, refusing an existing (course, group) pair with DRF's unique-together message;
 * then reads its course and its group again (the child's half of docs/event-core.md's
 * parent/child protocol): a deletion or move of the course, or a deletion of the group, that ran
 * meanwhile may have deleted their links before this one was written, so the link removes
 * itself and the course (or group) is, for this request, one that does not exist.
 */
async function insert(tenant: Tenant, doc: Omit<GroupCourseDoc, 'org'> & { born: string }): Promise<GroupCourseDoc> {
  let inserted: GroupCourseDoc;
  try {
    inserted = await links(tenant).insertOne(doc);
  } catch (err) {
    if (isDuplicateKey(err)) throw notUnique();
    throw err;
  }
  const [courseOk, groupOk] = await Promise.all([courseHolds(tenant, doc.course, doc.born), groupExists(tenant, doc.group)]);
  if (courseOk && groupOk) return inserted;
  await links(tenant).deleteMany({ _id: doc._id, born: doc.born });
  await syncCourseFacts(tenant, [doc.course]);
  throw new Invalid(courseOk ? { group: [doesNotExist(doc.group)] } : { course: [doesNotExist(doc.course)] });
}

export async function createGroupCourse(tenant: Tenant, input: { course: string; group: number }): Promise<GroupCourseDoc> {
  const born = (await checkReferences(tenant, input))!;
  const _id = linkKey(input.course, input.group);
  // Checked first so that a refused request claims no id.
  if (await links(tenant).has({ course: input.course, group: input.group })) throw notUnique();
  const id = await tenant.nextId('group_courses');
  const doc = await insert(tenant, { _id, id, course: input.course, group: input.group, born });
  await syncCourseFacts(tenant, [doc.course]);
  return doc;
}

/**
 * A link's `_id` is its (course, group) pair, so changing either inserts the new document
 * (refused when that pair exists) and then deletes the old one (src/domain/rekey.ts). Null: no
 * link `id` here (or a DELETE of it came first).
 */
export async function updateGroupCourse(tenant: Tenant, id: number, patch: { course?: string; group?: number }): Promise<GroupCourseDoc | null> {
  // The id first (404 before 400, as DRF's get_object before its serializer), and a DELETE that died after its mark finished.
  const read = await links(tenant).find({ id }).toArray();
  if (read.length === 0) return null;
  const gone = await finishIfDeleted<GroupCourseDoc>(tenant, COLLECTIONS.groupCourses, id);
  if (gone) {
    await syncCourseFacts(
      tenant,
      [...read, ...gone].map((l) => l.course),
    );
    return null;
  }
  await checkReferences(tenant, patch);
  const old = read[0]!;
  const course = patch.course ?? old.course;
  const group = patch.group ?? old.group;
  const _id = linkKey(course, group);
  // Already so (another PATCH of the link may have made it so: its new document is this one's answer).
  const same = read.find((l) => l._id === _id);
  if (same) {
    // Two documents: a PATCH under way, or one that died after its insert and synced no facts.
    if (read.length > 1)
      await syncCourseFacts(
        tenant,
        read.map((l) => l.course),
      );
    return same;
  }
  // A new link: it begins now in the course's history, as a created one does.
  const born = await courseBirth(tenant, course);
  if (born === null) throw new Invalid({ course: [doesNotExist(course)] });
  let doc: GroupCourseDoc;
  try {
    doc = await insert(tenant, { _id, id, course, group, born });
  } catch (err) {
    // The pair is this link's already: another PATCH of it inserted it after the read.
    if (err instanceof Conflict && (await links(tenant).has({ _id, id }))) return updateGroupCourse(tenant, id, patch);
    // Its course or group deleted meanwhile, and the link with it: as had the deletion come first.
    if (err instanceof Invalid && !(await links(tenant).has({ id }))) return null;
    throw err;
  }
  const { outcome, removed } = await replaceKeyed(
    tenant,
    COLLECTIONS.groupCourses,
    read.map((l) => ({ _id: l._id })),
    doc,
  );
  await syncCourseFacts(tenant, outcome === 'superseded' ? [course] : [...read, ...removed].map((l) => l.course).concat(course));
  if (outcome === 'deleted') return null;
  // Superseded: another PATCH of the link came first; this one applies after it.
  return outcome === 'replaced' ? doc : updateGroupCourse(tenant, id, patch);
}

/** Deletes every document of the id (normally one; two while a PATCH re-keys it). */
export async function deleteGroupCourse(tenant: Tenant, id: number): Promise<boolean> {
  const { deleted, documents } = await deleteKeyed<GroupCourseDoc>(tenant, COLLECTIONS.groupCourses, id);
  await syncCourseFacts(
    tenant,
    documents.map((l) => l.course),
  );
  return deleted;
}
