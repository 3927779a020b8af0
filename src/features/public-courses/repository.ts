import { COLLECTIONS, type PublicCourseDoc } from '../../db/collections';
import { isDuplicateKey } from '../../db/driver-errors';
import { getOne, hasOne, listPage, type Page } from '../../db/records';
import type { Tenant } from '../../db/tenant';
import { syncCourseFacts } from '../../domain/list-facts';
import { Conflict, doesNotExist, fieldError } from '../../errors';
import type { Infer } from '../../validation';
import { coursesRepository } from '../courses/repository';
import type { publicCourseCreateSchema, publicCourseSchema } from './schema';

export type PublicCourse = Infer<typeof publicCourseSchema>;

const alreadyPublic = () => new Conflict({ course: ['This course is already public.'] });

export function publicCoursesRepository(tenant: Tenant) {
  const records = tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);

  /** Adds the course; one whose deletion is still cascading shows blank. */
  async function present(docs: PublicCourseDoc[]): Promise<PublicCourse[]> {
    const courses = await coursesRepository(tenant).refs(docs.map((d) => d.course));
    return docs.map((d) => ({ id: d.id, course: courses.get(d.course) ?? { id: d.course, name: '' } }));
  }

  return {
    list(page: Page): Promise<{ count: number; results: PublicCourse[] }> {
      return listPage(records, page, {}, present);
    },

    get(id: number): Promise<PublicCourse | null> {
      return getOne(records, { id }, present);
    },

    /** The record's `_id` is the course key: a second record for a course is refused (400 on `course`). */
    async create(input: Infer<typeof publicCourseCreateSchema>): Promise<PublicCourse> {
      if (!(await coursesRepository(tenant).exists(input.course))) throw fieldError('course', doesNotExist(input.course));
      // Checked first so that a refused request claims no id.
      if (await hasOne(records, { _id: input.course })) throw alreadyPublic();
      const id = await tenant.nextId('public_courses');
      let doc: PublicCourseDoc;
      try {
        doc = await records.insertOne({ _id: input.course, id, course: input.course });
      } catch (err) {
        if (isDuplicateKey(err)) throw alreadyPublic();
        throw err;
      }
      await syncCourseFacts(tenant, [doc.course]);
      return (await present([doc]))[0]!;
    },

    async delete(id: number): Promise<boolean> {
      const doc = await records.findOneAndDelete({ id });
      if (doc) await syncCourseFacts(tenant, [doc.course]);
      return doc !== null;
    },
  };
}

export type PublicCoursesRepository = ReturnType<typeof publicCoursesRepository>;
