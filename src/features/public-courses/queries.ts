import { COLLECTIONS, type PublicCourseDoc } from '../../db/collections';
import type { Page, Tenant } from '../../db/tenant';
import type { Infer } from '../../validation';
import { courseQueries } from '../courses/queries';
import { getOne, listPage } from '../queries';
import type { publicCourseSchema } from './schema';

type PublicCourse = Infer<typeof publicCourseSchema>;

/** Reads of the `public-courses` resource; writes are src/domain/public-courses.ts's. */
export function publicCourseQueries(tenant: Tenant) {
  const records = tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);

  /** Adds the course; one whose deletion is still cascading shows blank. */
  async function present(docs: PublicCourseDoc[]): Promise<PublicCourse[]> {
    const courses = await courseQueries(tenant).refs(docs.map((d) => d.course));
    return docs.map((d) => ({ id: d.id, course: courses.get(d.course) ?? { id: d.course, name: '' } }));
  }

  return {
    list(page: Page): Promise<{ count: number; results: PublicCourse[] }> {
      return listPage(records, page, {}, present);
    },

    get(id: number): Promise<PublicCourse | null> {
      return getOne(records, { id }, present);
    },

    show: async (doc: PublicCourseDoc) => (await present([doc]))[0]!,
  };
}
