import type { Db, Filter } from 'mongodb';
import { withCause } from '../db/change-context';
import { COLLECTIONS, type CourseDoc, type GroupCourseDoc, type PublicCourseDoc } from '../db/collections';
import { ownerLookup } from '../db/owners';
import { indexCourse, unindexCourse } from '../db/search-index';
import { Tenant } from '../db/tenant';
import { versionOf } from '../db/versioned-writes';
import { type ApplyOutcome, asStamp, type EventStamp, lateVersion } from './event-time';
import { syncCourseFacts } from './list-facts';
import {
  announceDeletion,
  bornUpTo,
  deleteIfNewer,
  keptStamp,
  namedByTombstone,
  replaceEarlier,
  upsertIfNewer,
  type VersionedRecordRef,
} from './versioned-records';

/** The ORG part of `course-v1:ORG+NUM+RUN`, or null for a key of another shape. */
export function orgFromCourseKey(courseKey: string): string | null {
  const m = /^course-v1:([^+/:\s]+)\+[^+\s]+\+[^+\s]+$/.exec(courseKey);
  return m ? m[1]! : null;
}

const courseTombstone = (courseKey: string) => `course:${courseKey}`;

/**
 * The version of course `key` in the organization, or null when it has none (a reference a link
 * or public record makes must exist). A link or public record made now begins there in event
 * time (`born_v`): a deletion or move of the course older than it, arriving late, leaves it.
 */
export async function courseVersion(tenant: Tenant, key: string): Promise<string | null> {
  const course = await tenant.collection<CourseDoc>(COLLECTIONS.courses).findById(key, { projection: { event_time: 1, event_n: 1 } });
  return course ? versionOf(course) : null;
}

/**
 * Deletes what an administrator hung on course `key` (links, the public record) before version
 * `v`: a deletion or a move of the course at `v`, arriving after a newer event of it, took them
 * in event time.
 */
async function takeBackDependentsBefore(tenant: Tenant, key: string, v: string): Promise<void> {
  const before = { $lt: v };
  const [links, publicRecord] = await withCause('cascade', () =>
    Promise.all([
      tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).deleteMany({ course: key, born_v: before } as Filter<GroupCourseDoc>),
      tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).deleteOne({ _id: key, born_v: before } as Filter<PublicCourseDoc>),
    ]),
  );
  if (links.deletedCount + publicRecord.deletedCount > 0) await syncCourseFacts(tenant, [key]);
}

/** Deletes a course's group links and public record begun up to version `upTo` (bornUpTo): what hangs off a course in its organization. */
async function deleteCourseDependents(tenant: Tenant, courseKey: string, upTo: string | undefined): Promise<number> {
  const [links, publicRecord] = await withCause('cascade', () =>
    Promise.all([
      tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).deleteMany({ course: courseKey, ...bornUpTo(upTo) } as Filter<GroupCourseDoc>),
      tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).deleteOne({ _id: courseKey, ...bornUpTo(upTo) } as Filter<PublicCourseDoc>),
    ]),
  );
  return links.deletedCount + publicRecord.deletedCount;
}

/** Where course `key` is and what hangs off it: links and the public record point at its organization's groups, so they neither travel nor outlive it. */
function courseRef(db: Db, key: string): VersionedRecordRef {
  return {
    collection: COLLECTIONS.courses,
    tombstone: courseTombstone(key),
    ownerOrg: () => ownerLookup(db).courseOrg(key),
    deleteDependents: async (home, upTo) => {
      await deleteCourseDependents(home, key, upTo);
      await unindexCourse(home, key);
    },
    rederive: async (home, record) => {
      await syncCourseFacts(home, [key]);
      await indexCourse(home, record as CourseDoc);
    },
  };
}

/** Records a course in the tenant's organization as of `at`, unless it already reflects it or a newer event. */
export async function upsertCourse(tenant: Tenant, course: { key: string; name: string }, at: string | EventStamp): Promise<ApplyOutcome> {
  const stamp = asStamp(at);
  const {
    outcome,
    current,
    version: v,
  } = await upsertIfNewer<CourseDoc>(tenant, {
    // A new course has no link and no public record yet: its list facts are derived after the write.
    doc: { _id: course.key, id: course.key, name: course.name, event_time: stamp.time, is_public: 0, linked: 0, facts_v: 0 },
    set: { id: course.key, name: course.name, event_time: stamp.time },
    at: stamp,
    ...courseRef(tenant.db, course.key),
  });
  // Derived again on every event, a duplicate or stale one too (repairs what a crash left undone).
  if (current) {
    const home = current.org === tenant.org ? tenant : new Tenant(tenant.db, current.org);
    // A stale event of another organization: in event time the course was there then (a move and a move back).
    if (outcome === 'stale' && home !== tenant) await takeBackDependentsBefore(home, current._id, v);
    await syncCourseFacts(home, [current._id]);
    await indexCourse(home, current);
  }
  return outcome;
}

/**
 * Places again catalog event `eventId`, which has no `time`, at `to` (its earliest Kafka timestamp
 * moved back from `from`: src/db/event-times.ts): the course becomes what event time gives
 * (versioned-records.ts `replaceEarlier`), and what it derives follows.
 */
export async function replaceCourseEvent(db: Db, courseKey: string, eventId: string, from: string, to: string): Promise<void> {
  const placed = await replaceEarlier<CourseDoc>(db, courseRef(db, courseKey), courseKey, eventId, from, to);
  if (!placed) return;
  // A deletion refused meanwhile, newer than the event now: the course is deleted after all, or,
  // created again by newer events, loses what hung on it before the deletion.
  if (placed.deletion && placed.deletionInPast) await takeBackDependentsBefore(placed.home, courseKey, lateVersion(placed.deletion.time));
  else if (placed.deletion && (await deleteCourse(db, courseKey, placed.deletion, placed.home.org)) !== 'stale') return;
  await syncCourseFacts(placed.home, [courseKey]);
  await indexCourse(placed.home, placed.record);
  // The kept events, applied again in their order, now that the course is older (one named another organization).
  for (const p of placed.elsewhere) {
    if (p.deleted) await deleteCourse(db, courseKey, keptStamp(p), p.org);
    else await upsertCourse(new Tenant(db, p.org), { key: courseKey, name: String(p.set.name) }, keptStamp(p));
  }
}

/**
 * Deletes a course with its links and public record (docs/events.md), in whichever organization
 * holds it, and leaves a tombstone by course key alone, so that no older or redelivered event,
 * whatever organization it names, brings it back. Dependents go first, so a crash leaves the
 * course and a redelivery finishes the job. `org`: where the course would be if no organization
 * holds it (recorded on the tombstone, for people reading the data).
 */
export async function deleteCourse(
  db: Db,
  courseKey: string,
  at: string | EventStamp,
  org: string | null = orgFromCourseKey(courseKey),
): Promise<ApplyOutcome> {
  const stamp = asStamp(at);
  const { outcome, survivor } = await deleteIfNewer(db, { ...courseRef(db, courseKey), id: courseKey, at: stamp, org });
  // A deletion older than the course (created again after it) took what hung on it then.
  // After the events of its time the course applied (the tie rule), unless it is one of them, delivered again.
  if (outcome === 'stale' && survivor && !(await namedByTombstone(db, courseTombstone(courseKey), stamp))) {
    await takeBackDependentsBefore(survivor.home, courseKey, lateVersion(stamp.time));
  }
  if (outcome === 'duplicate') await announceDeletion(db, courseTombstone(courseKey), COLLECTIONS.courses, courseKey);
  return outcome;
}
