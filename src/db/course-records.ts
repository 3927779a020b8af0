import type { Db } from 'mongodb';
import { COLLECTIONS, type CourseRecordDoc, type StoredHistory } from './collections';
import { writeIfUnchanged } from './compare-and-set';

/**
 * Course records by course key alone, whatever organization holds them (docs/event-core.md,
 * "Storage and writes"): the event core reads a course's history here and writes it back on the
 * condition that nobody wrote it since (`rev`). Like the owner lookup, it answers a question
 * asked before an organization is known; no request reads it (requests read courses through their
 * tenant, which never sees a deleted course: its `org` is null).
 */
export function courseRecords(db: Db) {
  const records = db.collection<CourseRecordDoc>(COLLECTIONS.courses);
  return {
    async read(key: string): Promise<CourseRecordDoc | null> {
      const doc = await records.findOne({ _id: key });
      // FerretDB v1 drops a null from `$setOnInsert` (the upgrade's deleted courses): absent reads as none.
      return doc && { ...doc, org: doc.org ?? null };
    },

    /** Writes `next` if the record is still the one read (compare-and-set.ts); the list facts are derived apart (list-facts.ts). */
    writeIfUnchanged: (read: CourseRecordDoc | null, next: CourseRecordDoc) => writeIfUnchanged(records, read, next, ['is_public', 'linked', 'facts_v']),

    /**
     * Organizations whose links and public record are deleted are no longer pending, unless the
     * record was written since (its writer projects again, and may have left one of them again).
     */
    async leftDone(key: string, rev: number): Promise<void> {
      await records.updateOne({ _id: key, rev }, { $set: { left: [] } });
    },
  };
}

/**
 * The history of a course stored before histories were kept (`event_time`, `org`, `name`): its
 * past is not known, so it is the floor, at the record's time; the course's incarnation began
 * before anything hung on it (`since` ''). The upgrade (upgrades.ts) writes it, and a record read
 * before that (a seed) is read as it.
 */
export function legacyCourseHistory(doc: Pick<CourseRecordDoc, 'event_time' | 'name' | 'org'>): StoredHistory {
  const state = doc.org === null ? { record: null, since: null } : { record: { org: doc.org, name: doc.name }, since: { at: '', seq: 0 } };
  return { seq: 1, entries: [], floor: { place: { at: doc.event_time, seq: 1 }, state, ids: [] } };
}
