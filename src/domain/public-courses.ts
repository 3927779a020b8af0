import { COLLECTIONS, type PublicCourseDoc } from '../db/collections';
import { refusingDuplicates } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { Conflict, doesNotExist, fieldError } from '../errors';
import { createChild } from './children';
import { courseBirth } from './courses';
import { syncCourseFacts } from './list-facts';

/**
 * Public-course records (docs/api.md, `public-courses`): a course open to everyone. The
 * record's `_id` is the course key, so a course has at most one. Every write derives the
 * course's list facts again (src/domain/list-facts.ts).
 */

const alreadyPublic = () => new Conflict({ course: ['This course is already public.'] });
const records = (tenant: Tenant) => tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);

export async function createPublicCourse(tenant: Tenant, input: { course: string }): Promise<PublicCourseDoc> {
  const born = await courseBirth(tenant, input.course);
  if (born === null) throw fieldError('course', doesNotExist(input.course));
  // Checked first so that a refused request claims no id.
  if (await records(tenant).has({ _id: input.course })) throw alreadyPublic();
  const id = await tenant.nextId('public_courses');
  // Written under its course (children.ts): deleted or moved meanwhile, it takes the record back.
  return createChild(tenant, { kind: 'public', id: input.course, courses: [input.course], parents: { course: { key: input.course, born } } }, () =>
    refusingDuplicates(() => records(tenant).insertOne({ _id: input.course, id, course: input.course, born }), alreadyPublic),
  );
}

export async function deletePublicCourse(tenant: Tenant, id: number): Promise<boolean> {
  const doc = await records(tenant).findOneAndDelete({ id });
  if (doc) await syncCourseFacts(tenant, [doc.course]);
  return doc !== null;
}
