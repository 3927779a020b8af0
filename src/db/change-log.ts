import type { Db } from 'mongodb';
import { retry } from '../retry';
import { type ChangeLogDoc, type ChangeLogEntry, COLLECTIONS } from './collections';
import { isClientClosed } from './errors';

/**
 * The change sequence: one document per collection counting the writes that changed it (`seq`)
 * and keeping the newest of them (`log`: which record, of which organization). Every write
 * through a Tenant records itself here after it lands (src/db/tenant.ts), so any process can
 * learn, in one read of this small collection, exactly which records changed since it last
 * looked: caches drop only those (src/features/access/cache.ts).
 *
 * One atomic update (`$inc` with `$push … $slice`) moves the sequence and appends the entry, so
 * `log[i]` is always change number `seq - log.length + 1 + i`: no gaps, no second write, and
 * the log trims itself. A reader that fell further behind than the log reaches starts afresh.
 *
 * An entry also names the outbox intent its write carried out (src/db/outbox.ts): this log is
 * how the change relay learns, without a write of its own, that an intent's write is done.
 *
 * Each entry is stored as one JSON string (`["<key>","<org>","<intent>"]`), not a sub-document:
 * every decision reads these documents, and FerretDB reads and rewrites an array of 64 strings
 * in about half the time of 64 small documents (`npm run profile -- change-log`).
 */
export const CHANGE_LOG_LENGTH = 64;

export interface Change {
  seq: number;
  /** The record's `_id`; null when the write may have touched any record of the collection. */
  key: string | null;
  org: string;
  /** The outbox intent the write carried out, if it had one. */
  intent?: string;
}

export interface CollectionChanges {
  seq: number;
  /** The newest changes, oldest first; every change up to `seq` not listed is forgotten. */
  recent: Change[];
}

const changeLog = (db: Db) => db.collection<ChangeLogDoc>(COLLECTIONS.changeLog);

/** Where the sequences of `collections` stand, with their recent changes: one read. */
export async function readChangeLog(db: Db, collections: readonly string[]): Promise<Map<string, CollectionChanges>> {
  const docs = await changeLog(db)
    .find({ _id: { $in: [...collections] } })
    .toArray();
  return new Map(
    docs.map((d) => {
      const first = d.seq - d.log.length + 1;
      return [d._id, { seq: d.seq, recent: d.log.map((e, i) => ({ seq: first + i, ...decodeEntry(e) })) }];
    }),
  );
}

export const encodeEntry = (e: ChangeLogEntry): string => JSON.stringify(e.i ? [e.k, e.o, e.i] : [e.k, e.o]);

function decodeEntry(stored: string | ChangeLogEntry): Omit<Change, 'seq'> {
  // A log last written by an older version holds sub-documents until 64 new changes push them out.
  const [key, org, intent] = typeof stored === 'string' ? (JSON.parse(stored) as [string | null, string, string?]) : [stored.k, stored.o, stored.i];
  return { key, org, ...(intent ? { intent } : {}) };
}

/**
 * Records that `entries` of `collection` changed. Many entries at once become one "anything may
 * have changed" (still naming their intent: one write, one intent).
 */
export async function recordChanges(db: Db, collection: string, entries: ChangeLogEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const first = entries[0]!;
  const log = entries.length > CHANGE_LOG_LENGTH / 4 ? [{ k: null, o: first.o, ...(first.i ? { i: first.i } : {}) }] : entries;
  await changeLog(db).updateOne(
    { _id: collection },
    { $inc: { seq: log.length }, $push: { log: { $each: log.map(encodeEntry), $slice: -CHANGE_LOG_LENGTH } } },
    { upsert: true },
  );
}

/**
 * The record of a write that landed. If it fails (the database went away between the two), the
 * caller gets the error and "anything of this collection may have changed" is recorded in the
 * background until it succeeds. A process killed in that gap: when the write opened an outbox
 * intent, the change relay records the change when it resolves the intent without its "done"
 * (src/changes/relay.ts), so caches drop the records at most the intent grace period late; a
 * write without an intent (users, courses, and tracked writes when neither change events nor
 * the audit trail asked for one) leaves caches stale until the next change of the record.
 */
export async function recordAfterWrite(db: Db, collection: string, entries: ChangeLogEntry[]): Promise<void> {
  try {
    await recordChanges(db, collection, entries);
  } catch (err) {
    recordInBackground(db, collection, entries[0]?.o ?? '');
    throw err;
  }
}

/** Collections whose record is being retried, per database: one retry loop each, however many writes failed. */
const retrying = new WeakMap<Db, Set<string>>();

function recordInBackground(db: Db, collection: string, org: string): void {
  let pending = retrying.get(db);
  if (!pending) {
    pending = new Set();
    retrying.set(db, pending);
  }
  if (pending.has(collection)) return;
  pending.add(collection);
  // A client closed on purpose (shutdown) will not come back; anything else may.
  void retry(() => recordChanges(db, collection, [{ k: null, o: org }]), {
    policy: { initialMs: 100, maxMs: 5000 },
    onFailure: (err) => !isClientClosed(err),
  })
    .catch(() => undefined)
    .finally(() => pending.delete(collection));
}
