import { COLLECTIONS, type GroupCourseDoc } from '../../db/collections';
import type { Page, Tenant } from '../../db/tenant';
import type { Infer } from '../../validation';
import { courseQueries } from '../courses/queries';
import { groupQueries } from '../groups/queries';
import { getOne, listPage } from '../queries';
import type { groupCourseSchema } from './schema';

type GroupCourse = Infer<typeof groupCourseSchema>;

/** Reads of the `group-courses` resource; writes are src/domain/group-courses.ts's. */
export function groupCourseQueries(tenant: Tenant) {
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);

  /** Adds the course and group; a reference whose record a cascade is removing shows blank. */
  async function present(docs: GroupCourseDoc[]): Promise<GroupCourse[]> {
    const [courses, groups] = await Promise.all([courseQueries(tenant).refs(docs.map((d) => d.course)), groupQueries(tenant).refs(docs.map((d) => d.group))]);
    return docs.map((d) => ({
      id: d.id,
      course: courses.get(d.course) ?? { id: d.course, name: '' },
      group: groups.get(d.group) ?? { id: d.group, name: '' },
    }));
  }

  return {
    list(page: Page): Promise<{ count: number; results: GroupCourse[] }> {
      return listPage(links, page, {}, present);
    },

    get(id: number): Promise<GroupCourse | null> {
      return getOne(links, { id }, present);
    },

    exists(id: number): Promise<boolean> {
      return links.has({ id });
    },

    show: async (doc: GroupCourseDoc) => (await present([doc]))[0]!,
  };
}
