import type { Db } from 'mongodb';
import { COLLECTIONS, type CourseDoc, type GroupCourseDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { applyCatalogInfo } from '../../src/domain/course-event-data';
import { normalizeEventTime } from '../../src/domain/event-time';
import { createGroupCourse } from '../../src/domain/group-courses';
import { newGroup } from './domain';
import { uniqueName } from './stack';

/**
 * The world the re-key reviews (test/integration/review-rekey*.test.ts) start from: an
 * organization with a group, three courses C1 < C2 < C3 (by insertion and by `_id`, whichever
 * order the server answers an unsorted find in) and one link of C1 to the group, with what stands
 * under the link's id, every link, and each course's `linked` fact, by the courses' short names.
 */
export async function linkWorld(db: Db) {
  const org = uniqueName('org');
  const tenant = new Tenant(db, org);
  const group = await newGroup(tenant);
  const courses = ['C1', 'C2', 'C3'].map((c) => `course-v1:${org}+${c}+R`);
  const time = normalizeEventTime('2026-08-01T00:00:01Z');
  for (const key of courses) await applyCatalogInfo(db, { catalog_info: { course_key: key, name: key }, organization: org }, { time, id: `c1${key}` }, org);
  const { id } = await createGroupCourse(tenant, { course: courses[0]!, group });
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
  const standing = async () => (await links.find({ id }).toArray()).map((l) => l.course.split('+')[1]);
  const allLinks = async () => (await links.find({}).toArray()).map((l) => l.course.split('+')[1]);
  const linked = async () => {
    const said = await tenant.collection<CourseDoc>(COLLECTIONS.courses).findByIds(courses);
    return Object.fromEntries(courses.map((c) => [c.split('+')[1]!, said.get(c)?.linked]));
  };
  return { tenant, group, courses, id, standing, allLinks, linked };
}
