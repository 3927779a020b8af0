import { withCause } from '../db/change-context';
import { COLLECTIONS, type CourseDoc, type GroupCourseDoc, type PublicCourseDoc } from '../db/collections';
import { ownerLookup, Tenant } from '../db/tenant';
import type { ApplyOutcome } from './event-time';
import { syncCourseFacts } from './list-facts';
import { indexCourse, unindexCourse } from './search-index';
import { recordDeletion, upsertIfNewer } from './versioned-records';

/** The ORG part of `course-v1:ORG+NUM+RUN`, or null for a key of another shape. */
export function orgFromCourseKey(courseKey: string): string | null {
  const m = /^course-v1:([^+/:\s]+)\+[^+\s]+\+[^+\s]+$/.exec(courseKey);
  return m ? m[1]! : null;
}

export const courseTombstone = (courseKey: string) => `course:${courseKey}`;

/** Deletes a course's group links and public record: what hangs off a course in its organization. */
async function deleteCourseDependents(tenant: Tenant, courseKey: string): Promise<number> {
  const [links, publicRecord] = await withCause('cascade', () =>
    Promise.all([
      tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).deleteMany({ course: courseKey }),
      tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).deleteOne({ _id: courseKey }),
    ]),
  );
  return links.deletedCount + publicRecord.deletedCount;
}

/** Records a course in the tenant's organization as of `time`, unless a newer event is already reflected. */
export async function upsertCourse(tenant: Tenant, course: { key: string; name: string }, time: string): Promise<ApplyOutcome> {
  const { outcome, current } = await upsertIfNewer<CourseDoc>(tenant, {
    collection: COLLECTIONS.courses,
    // A new course has no link and no public record yet: its list facts are derived after the write.
    doc: { _id: course.key, id: course.key, name: course.name, event_time: time, is_public: 0, linked: 0, facts_v: 0 },
    set: { id: course.key, name: course.name, event_time: time },
    tombstone: courseTombstone(course.key),
    ownerOrg: () => ownerLookup(tenant.db).courseOrg(course.key),
    // Links and the public record point at the old organization's groups: they do not travel.
    moveOut: async (old) => {
      await deleteCourseDependents(old, course.key);
      await unindexCourse(old, course.key);
    },
  });
  // Derived again on every event, a duplicate or stale one too (repairs what a crash left undone).
  if (current) {
    const home = current.org === tenant.org ? tenant : new Tenant(tenant.db, current.org);
    await syncCourseFacts(home, [current._id]);
    await indexCourse(home, current);
  }
  return outcome;
}

/**
 * Deletes a course with its links and public record (SPEC section 5), in the organization that
 * holds it (else the one its key names), leaving a tombstone there. Dependents go first, so a
 * crash leaves the course and a redelivery finishes the job.
 */
export async function deleteCourse(tenant: Tenant, courseKey: string, time: string): Promise<ApplyOutcome> {
  const tombstoned = await recordDeletion(tenant, courseTombstone(courseKey), time);
  const courses = tenant.collection<CourseDoc>(COLLECTIONS.courses);
  const course = await courses.findById(courseKey, { projection: { event_time: 1 } });
  if (course && course.event_time > time) return 'stale';
  const dependents = await deleteCourseDependents(tenant, courseKey);
  const deleted = course ? await courses.deleteOne({ _id: courseKey, event_time: { $lte: time } }) : { deletedCount: 0 };
  await unindexCourse(tenant, courseKey, time);
  return dependents + deleted.deletedCount > 0 ? 'applied' : tombstoned;
}

/** The organization a course-deleted event applies to: the course's, else its key's. */
export async function courseOrgForDeletion(tenantDb: Tenant['db'], courseKey: string): Promise<string | null> {
  return (await ownerLookup(tenantDb).courseOrg(courseKey)) ?? orgFromCourseKey(courseKey);
}
