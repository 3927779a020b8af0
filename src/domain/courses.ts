import type { Db, Filter } from 'mongodb';
import { withCause } from '../db/change-context';
import { recordAfterWrite } from '../db/change-log';
import { COLLECTIONS, type CourseRecordDoc, type GroupCourseDoc, type PublicCourseDoc } from '../db/collections';
import { courseRecords, legacyCourseHistory } from '../db/course-records';
import { indexCourse, unindexCourse } from '../db/search-index';
import { Tenant } from '../db/tenant';
import { entryOf, historyBounds, isLegacyDuplicate, legacyIdsOf, OUTCOME, writesNothing } from './arrivals';
import { type CourseEntry, type CourseState, courseFold, foldCourse } from './course-fold';
import type { ApplyOutcome, EventStamp } from './event-time';
import { syncCourseFacts } from './list-facts';
import { type Arriving, arrive, compact, emptyHistory, type History, newestPlace, placeKey, placeNow } from './record-history';

/**
 * Courses from events (docs/event-core.md): a course's record holds its history, and what the
 * course is follows from `foldCourse`; this file only reads, folds, writes on the condition that
 * nobody wrote first, and brings what hangs off the course in line with the result.
 */

/** The ORG part of `course-v1:ORG+NUM+RUN`, or null for a key of another shape. */
export function orgFromCourseKey(courseKey: string): string | null {
  const m = /^course-v1:([^+/:\s]+)\+[^+\s]+\+[^+\s]+$/.exec(courseKey);
  return m ? m[1]! : null;
}

type CourseHistory = History<CourseEntry, CourseState>;

const historyOf = (doc: CourseRecordDoc | null): CourseHistory =>
  doc === null ? emptyHistory() : ((doc.h ?? legacyCourseHistory(doc)) as unknown as CourseHistory);

/** The record a history folds to, after `doc` (null: the course's first event). */
function recordOf(key: string, doc: CourseRecordDoc | null, h: CourseHistory): CourseRecordDoc {
  const state = foldCourse(h);
  const org = state.record?.org ?? null;
  const left = [...(doc?.left ?? [])];
  if (doc?.org && doc.org !== org) left.push({ org: doc.org, upTo: placeKey(placeNow(h)) });
  return {
    _id: key,
    id: key,
    org,
    name: state.record?.name ?? doc?.name ?? '',
    h: h as unknown as CourseRecordDoc['h'],
    rev: (doc?.rev ?? 0) + 1,
    since: placeKey(state.since),
    left,
    ...(legacyIdsOf(doc) ? { legacy_ids: legacyIdsOf(doc) } : {}),
    event_time: newestPlace(h)?.at ?? '',
    is_public: doc?.is_public ?? 0,
    linked: doc?.linked ?? 0,
    facts_v: doc?.facts_v ?? 0,
  };
}

/**
 * The one way an event reaches a course: read its record, let the entry arrive, fold, write on
 * the condition that nobody wrote first (else read and fold again), then bring what hangs off the
 * course in line (`project`). A duplicate writes nothing but projects again, finishing what a
 * process that died after its write left undone.
 */
async function applyCourseEntry(db: Db, key: string, at: string | EventStamp, body: { kind: 'catalog'; org: string; name: string } | { kind: 'deleted' }) {
  const records = courseRecords(db);
  const { stamp, base } = entryOf(at);
  for (;;) {
    const doc = await records.read(key);
    const before = historyOf(doc);
    const { history, arrival } = isLegacyDuplicate(doc, stamp)
      ? { history: before, arrival: 'duplicate' as const }
      : arrive(before, { ...base, ...body } as Arriving<CourseEntry>);
    if (writesNothing(history, before, arrival, base)) {
      if (doc) await project(db, doc);
      return OUTCOME[arrival];
    }
    const next = recordOf(key, doc, compact(history, courseFold, historyBounds()));
    if (!(await records.writeIfUnchanged(doc, next))) continue;
    await project(db, next);
    return OUTCOME[arrival];
  }
}

/**
 * Deletes a course's links and public record in the tenant's organization born before `since`
 * (before its current incarnation began). A child without `born` began before the history was
 * kept: it goes too.
 */
async function deleteChildrenBefore(tenant: Tenant, key: string, since: string): Promise<void> {
  const born = { $or: [{ born: { $lt: since } }, { born: { $exists: false } }] };
  await withCause('cascade', () =>
    Promise.all([
      tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).deleteMany({ course: key, ...born } as Filter<GroupCourseDoc>),
      tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).deleteOne({ _id: key, ...born } as Filter<PublicCourseDoc>),
    ]),
  );
}

/** The arrival count in a place key (`<at>#<seq>`): arrivals only grow, places may not (an event without `time` moves earlier). */
const seqOf = (key: string) => Number(key.slice(key.indexOf('#') + 1));

/**
 * Deletes a course's links and public record in an organization it left, made before it left:
 * by arrival (`upTo`'s count), not by place, since an event without `time` moved earlier can
 * put the leave's place below a child made while the course stood there. A child made there
 * since came after the course's return, so after more arrivals: it stays. A child without `born`
 * goes. Read, then deleted by `_id` and `born`: nothing made before the leave can appear after it.
 */
async function deleteChildrenUpTo(tenant: Tenant, key: string, upTo: string): Promise<void> {
  const made = (born: string | undefined) => born === undefined || seqOf(born) <= seqOf(upTo);
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
  const publics = tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);
  const [linked, publicRecord] = await Promise.all([
    links.find({ course: key }, { projection: { _id: 1, born: 1 } }).toArray(),
    publics.findOne({ _id: key }, { projection: { _id: 1, born: 1 } }),
  ]);
  // By `_id`, course and `born`: a link made again after the course came back has another `born`,
  // and one a PATCH moved meanwhile another course.
  const gone = linked.filter((l) => made(l.born)).map((l) => ({ _id: l._id, course: key, born: l.born === undefined ? { $exists: false } : l.born }));
  await withCause('cascade', () =>
    Promise.all([
      gone.length > 0 ? links.deleteMany({ $or: gone } as Filter<GroupCourseDoc>) : null,
      publicRecord && made(publicRecord.born)
        ? publics.deleteOne({ _id: key, born: publicRecord.born === undefined ? { $exists: false } : publicRecord.born } as Filter<PublicCourseDoc>)
        : null,
    ]),
  );
}

/**
 * What follows from the record (docs/event-core.md, "What hangs off a record"): nothing of the
 * course stays in an organization it left, nothing born before its current incarnation stays in
 * its own, and its list facts and search grams follow its name. Idempotent: run after every
 * write, and again by any later event of the course.
 */
async function project(db: Db, doc: CourseRecordDoc): Promise<void> {
  const key = doc._id;
  for (const { org, upTo } of doc.left ?? []) {
    const away = new Tenant(db, org);
    await deleteChildrenUpTo(away, key, upTo);
    // Grams up to its time when it left: a course back there since has newer ones.
    if (org !== doc.org) await unindexCourse(away, key, upTo.slice(0, upTo.indexOf('#')));
    await recordAfterWrite(db, COLLECTIONS.courses, [{ k: key, o: org }]);
  }
  if (doc.left?.length) await courseRecords(db).leftDone(key, doc.rev!);
  if (doc.org === null) return;
  const home = new Tenant(db, doc.org);
  if (doc.since) await deleteChildrenBefore(home, key, doc.since);
  await syncCourseFacts(home, [key]);
  await indexCourse(home, doc);
  await recordAfterWrite(db, COLLECTIONS.courses, [{ k: key, o: doc.org }]);
}

/** Records a course in the tenant's organization as the event `at` (docs/event-core.md). */
export function upsertCourse(tenant: Tenant, course: { key: string; name: string }, at: string | EventStamp): Promise<ApplyOutcome> {
  return applyCourseEntry(tenant.db, course.key, at, { kind: 'catalog', org: tenant.org, name: course.name });
}

/**
 * Deletes a course, with its links and public record, in whichever organization holds it; its
 * record stays, in no organization, so that no older or redelivered event brings it back.
 */
export function deleteCourse(db: Db, courseKey: string, at: string | EventStamp): Promise<ApplyOutcome> {
  return applyCourseEntry(db, courseKey, at, { kind: 'deleted' });
}

/**
 * Where a link or public record made now under course `key` begins (placeKey), or null when the
 * tenant's organization has no such course: after everything the course has received.
 */
export async function courseBirth(tenant: Tenant, key: string): Promise<string | null> {
  const doc = await courseRecords(tenant.db).read(key);
  return doc?.org === tenant.org ? placeKey(placeNow(historyOf(doc))) : null;
}

/**
 * The other half of the parent/child protocol: a child is written, then its course read again.
 * False when the course was deleted, moved or began again since `born`; the caller then removes
 * the child (a deletion or move that ran meanwhile may have deleted the children before it).
 */
export async function courseHolds(tenant: Tenant, key: string, born: string): Promise<boolean> {
  const doc = await courseRecords(tenant.db).read(key);
  return doc?.org === tenant.org && born >= (doc.since ?? '');
}
