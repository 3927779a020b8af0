import { COLLECTIONS, type PublicCourseDoc } from '../../db/collections';
import type { Tenant } from '../../db/tenant';
import { isDuplicateKey } from '../../db/errors';
import { Conflict, doesNotExist, fieldError } from '../../errors';
import type { Page } from '../../db/records';
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
    async list(page: Page): Promise<{ count: number; results: PublicCourse[] }> {
      const [count, docs] = await Promise.all([
        records.countDocuments(),
        records.find().sort({ id: 1 }).skip(page.offset).limit(page.limit).toArray(),
      ]);
      return { count, results: await present(docs) };
    },

    async get(id: number): Promise<PublicCourse | null> {
      const doc = await records.findOne({ id });
      return doc && (await present([doc]))[0]!;
    },

    /** The record's `_id` is the course key: a second record for a course is refused (400 on `course`). */
    async create(input: Infer<typeof publicCourseCreateSchema>): Promise<PublicCourse> {
      if (!(await coursesRepository(tenant).exists(input.course))) throw fieldError('course', doesNotExist(input.course));
      // Checked first so that a refused request claims no id.
      if (await records.findOne({ _id: input.course }, { projection: { _id: 1 } })) throw alreadyPublic();
      const id = await tenant.nextId('public_courses');
      try {
        return (await present([await records.insertOne({ _id: input.course, id, course: input.course })]))[0]!;
      } catch (err) {
        if (isDuplicateKey(err)) throw alreadyPublic();
        throw err;
      }
    },

    async delete(id: number): Promise<boolean> {
      return (await records.deleteOne({ id })).deletedCount === 1;
    },
  };
}

export type PublicCoursesRepository = ReturnType<typeof publicCoursesRepository>;
