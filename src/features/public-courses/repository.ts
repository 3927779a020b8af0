import { COLLECTIONS, type PublicCourseDoc } from '../../db/collections';
import type { Tenant } from '../../db/tenant';
import { syncCourseFacts } from '../../domain/list-facts';
import { doesNotExist, fieldError, isDuplicateKey } from '../../http/errors';
import type { Page } from '../../http/pagination';
import type { Infer } from '../../validation';
import { coursesRepository } from '../courses/repository';
import type { publicCourseCreateSchema, publicCourseSchema } from './schema';

export type PublicCourse = Infer<typeof publicCourseSchema>;

const alreadyPublic = () => fieldError('course', 'This course is already public.');

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
        records.count(),
        records.page({}, page),
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
