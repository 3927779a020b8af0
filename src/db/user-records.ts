import type { Db } from 'mongodb';
import { COLLECTIONS, type LearnerRecordDoc, type MembershipDoc, type StoredHistory } from './collections';
import { writeIfUnchanged } from './compare-and-set';
import { readInPieces, refusedAsDuplicates } from './dialect';

/**
 * Learner records by user id alone, whatever organization holds them (docs/event-core.md,
 * "Writes"): the event core reads a learner's history here and writes it back on the condition
 * that nobody wrote it since (`rev`), as course-records.ts does for courses. A retired learner
 * keeps its record in no organization (`org` null, its profile blanked): no tenant reads it.
 */
export function learnerRecords(db: Db) {
  const records = db.collection<LearnerRecordDoc>(COLLECTIONS.users);
  // FerretDB v1 drops a null from `$setOnInsert` (the upgrade's retired learners): absent reads as none.
  const normalized = (doc: LearnerRecordDoc) => ({ ...doc, org: doc.org ?? null, m: doc.m ?? null });
  return {
    async read(id: number): Promise<LearnerRecordDoc | null> {
      const doc = await records.findOne({ _id: String(id) });
      return doc && normalized(doc);
    },

    /** The records of `ids`, whichever organization holds each, in one query per 1000 (by `_id` alone: see owners.ts). */
    async readMany(ids: readonly number[]): Promise<Map<number, LearnerRecordDoc>> {
      const keys = [...new Set(ids)].map(String);
      const docs = await readInPieces(keys, (piece) => records.find({ _id: { $in: piece } }).toArray());
      return new Map(docs.map((d) => [d.id, normalized(d)]));
    },

    /** Writes `next` if the record is still the one read (compare-and-set.ts); the list facts are derived apart (list-facts.ts). */
    writeIfUnchanged: (read: LearnerRecordDoc | null, next: LearnerRecordDoc) => writeIfUnchanged(records, read, next, ['grp', 'member', 'facts_v']),

    /** New learners' records in one unordered insert: the `_id`s refused (a record exists: its learner goes one by one). */
    async insertNew(docs: readonly LearnerRecordDoc[]): Promise<Set<string>> {
      if (docs.length === 0) return new Set();
      try {
        await records.insertMany([...docs], { ordered: false });
        return new Set();
      } catch (err) {
        const refused = refusedAsDuplicates(err);
        if (!refused) throw err;
        return new Set(refused.map((i) => docs[i]!._id));
      }
    },

    /** Marks a projection about to write (`writing`, see collections.ts), whatever the revision: the mark must outlive a stale writer. */
    async markWriting(id: string, mark: string): Promise<void> {
      await records.updateOne({ _id: id }, { $push: { writing: mark } });
    },

    /** Takes marks off (a finished projection's own, or ones the sweep finished). */
    async unmark(id: string, marks: readonly string[]): Promise<void> {
      if (marks.length > 0) await records.updateOne({ _id: id }, { $pullAll: { writing: [...marks] } });
    },

    /**
     * What follows from revision `rev` is in place (`projected`), the organizations it left are
     * done with and the projection's own marks come off; false when the record was written since
     * (the caller projects the newer one).
     */
    async projected(id: string, rev: number, marks: readonly string[]): Promise<boolean> {
      const done = await records.updateOne({ _id: id, rev }, { $set: { left: [], projected: rev }, $pullAll: { writing: [...marks] } });
      return done.matchedCount === 1;
    },

    /**
     * The same for many records at once (the batch path): one `updateMany` per revision (a batch's
     * new records are all at revision 1), since FerretDB updates a document in milliseconds however
     * the update is sent, and one command of many statements costs more than one of many matches.
     */
    async projectedMany(done: readonly { id: string; rev: number }[], marks: readonly string[]): Promise<void> {
      const byRev = new Map<number, string[]>();
      for (const { id, rev } of done) {
        const ids = byRev.get(rev);
        if (ids) ids.push(id);
        else byRev.set(rev, [id]);
      }
      for (const [rev, ids] of byRev) {
        for (let i = 0; i < ids.length; i += 1000) {
          await records.updateMany({ _id: { $in: ids.slice(i, i + 1000) }, rev }, { $set: { left: [], projected: rev }, $pullAll: { writing: [...marks] } });
        }
      }
    },

    /** Records with a mark made before `cutoff` (an ISO time): projections their process left unfinished. */
    async markedBefore(cutoff: string, limit: number): Promise<LearnerRecordDoc[]> {
      const docs = await records
        .find({ writing: { $lt: cutoff } })
        .limit(limit)
        .toArray();
      return docs.map(normalized);
    },
  };
}

/**
 * The history of a learner stored before histories were kept: its past is not known, so it is
 * the floor, at the record's time, with the membership it had (learner-fold.ts `LearnerState`);
 * its activation period is closed while it is active (its activation's rules were applied then)
 * and open while it is not. The upgrade (upgrades.ts) writes it.
 */
export function legacyLearnerHistory(
  doc: Pick<LearnerRecordDoc, 'org' | 'event_time' | 'username' | 'email' | 'name' | 'is_active' | 'is_staff' | 'is_site_admin'>,
  membership: Pick<MembershipDoc, 'group' | 'automatic'> | null,
): StoredHistory {
  const state =
    doc.org === null
      ? { record: null, membership: null, since: null, periodOpen: true }
      : {
          record: {
            org: doc.org,
            username: doc.username,
            email: doc.email,
            name: doc.name,
            is_active: doc.is_active,
            is_staff: doc.is_staff === true,
            is_site_admin: doc.is_site_admin === true,
          },
          membership: membership && { group: membership.group, by: membership.automatic ? 'rule' : 'admin', born: { at: '', seq: 0 } },
          since: { at: '', seq: 0 },
          periodOpen: !doc.is_active,
        };
  return { seq: 1, entries: [], floor: { place: { at: doc.event_time, seq: 1 }, state, ids: [] } };
}
