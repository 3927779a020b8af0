import type { Db } from 'mongodb';
import { COLLECTIONS, type LearnerRecordDoc, MAJORITY, type MembershipDoc, type ProjectionIntentDoc, type StoredHistory } from './collections';
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
  const intents = db.collection<ProjectionIntentDoc>(COLLECTIONS.projectionIntents, MAJORITY);
  // FerretDB v1 drops a null from `$setOnInsert` (the upgrade's retired learners): absent reads as none.
  const normalized = (doc: LearnerRecordDoc) => ({ ...doc, org: doc.org ?? null, m: doc.m ?? null });
  /** Of the batches that inserted `docs`, those still under way, with their marks: one query, none for batches seen closed. */
  async function pendingBatches(docs: readonly Pick<LearnerRecordDoc, 'batch'>[]): Promise<Map<string, string>> {
    const tokens = [...new Set(docs.map((d) => d.batch).filter((t): t is string => t !== undefined && !closedBatches.has(t)))];
    if (tokens.length === 0) return new Map();
    const open = await readInPieces(tokens, (piece) => intents.find({ _id: { $in: piece } }, { projection: { mark: 1 } }).toArray());
    const pending = new Map(open.map((b) => [b._id, b.mark]));
    for (const t of tokens) if (!pending.has(t)) closedBatches.add(t);
    return pending;
  }

  return {
    pendingBatches,

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

    /** A projection begins (its intent, before its first write: collections.ts `ProjectionIntentDoc`); `key`: a batch's token, else the mark. */
    async openIntent(key: string, mark: string, ids: readonly string[]): Promise<void> {
      await intents.insertOne({ _id: key, mark, ids: [...ids] });
    },

    /** Projections done: their intents go (`keys` as opened). */
    async closeIntents(keys: readonly string[]): Promise<void> {
      if (keys.length > 0) await intents.deleteMany({ _id: { $in: [...keys] } });
    },

    /** A batch's projection is complete: its records count as projected. */
    async closeBatch(token: string): Promise<void> {
      await intents.deleteOne({ _id: token });
      closedBatches.add(token);
    },

    /** Intents whose mark was made before `cutoff` (an ISO time): projections their process left unfinished. */
    abandonedIntents(cutoff: string, limit: number): Promise<ProjectionIntentDoc[]> {
      return intents
        .find({ mark: { $lt: cutoff } })
        .limit(limit)
        .toArray();
    },
  };
}

/**
 * Batches seen closed, by token: a closed batch never opens again, so whether a record's batch
 * is under way is asked of the database once per batch. Bounded: forgetting one costs a query.
 */
const closedBatches = new (class extends Set<string> {
  override add(token: string): this {
    if (this.size >= 10_000) this.clear();
    return super.add(token);
  }
})();

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
