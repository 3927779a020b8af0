import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Db, Document } from 'mongodb';
import { currentChangeContext } from './change-context';
import { COLLECTIONS, type CollectionName, MAJORITY, type OutboxDoc } from './collections';
import { IN_LIMIT } from './dialect';

/**
 * The outbox: the intent of every write of a tracked collection, written BEFORE the write from
 * the one place every write passes (TenantCollection, src/db/tenant.ts). Without transactions
 * (FerretDB v1) no write can commit with its record of itself, so the order does the work:
 *
 *   1. the intent (collection, records, organization, cause, actor, request id, and, when
 *      audited, the records as they were) is inserted;
 *   2. the write runs;
 *   3. the change-log entry the write records anyway (for caches) names the intent: "done".
 *
 * The change relay (src/changes/relay.ts) resolves an intent once it is done, or once it is older
 * than a grace period (its process died between 1 and 3, or the write failed): either way it
 * reads the records as they are NOW and publishes that state, so an intent whose write never
 * happened publishes the unchanged state again (harmless), and one whose write did is never lost.
 * An intent resolved without its "done" also gets the change record that step 3 may never have
 * written, so no cache keeps the records' old facts. A write refused by a unique key, or that changed nothing,
 * deletes its intent at once.
 *
 * An intent says what it asks for: a change event (`e`: its process had them on) and an audit
 * record (`audit`). Only a relay able to do all that the intents it meets ask resolves them.
 */

/**
 * The collections whose changes are published (docs/events-published.md) and audited (docs/audit-log.md), with the name the
 * API gives their records (the audit log's `resource`, the first part of an event's `subject`).
 */
export const TRACKED_RESOURCES: ReadonlyMap<CollectionName, string> = new Map<CollectionName, string>([
  [COLLECTIONS.groups, 'course-access-groups'],
  [COLLECTIONS.memberships, 'memberships'],
  [COLLECTIONS.rules, 'membership-rules'],
  [COLLECTIONS.groupCourses, 'group-courses'],
  [COLLECTIONS.publicCourses, 'public-courses'],
  [COLLECTIONS.siteConfigurations, 'site-configuration'],
]);

export const TRACKED: ReadonlySet<CollectionName> = new Set(TRACKED_RESOURCES.keys());

/**
 * After this, an intent that the change log has not named done is resolved anyway. A write
 * fails on its own well before (socket timeout 10 s), so this only waits for a dead process.
 */
export const INTENT_GRACE_MS = 30_000;

export interface ChangeSettings {
  /** Change events are published (CHANGES_TOPIC set): every write of a tracked collection opens an intent. */
  events: boolean;
  /** The audit trail is on: writes in an audited context (admin API, `cag`) open an intent. */
  audit: boolean;
}

/** Per database name, as every client of one database in this process shares the settings. */
const settings = new Map<string, ChangeSettings>();
/** Unconfigured (a tool or test writing through a Tenant): track everything, lose nothing. */
const DEFAULT_SETTINGS: ChangeSettings = { events: true, audit: true };

export function configureChanges(db: Db, value: ChangeSettings): void {
  settings.set(db.databaseName, value);
}

export function changeSettings(db: Db): ChangeSettings {
  return settings.get(db.databaseName) ?? DEFAULT_SETTINGS;
}

/** Whether a write of `collection` now opens an intent, and whether it is audited; null: neither. */
export function intentPolicy(db: Db, collection: CollectionName): { audit: boolean } | null {
  if (!TRACKED.has(collection)) return null;
  const { events, audit } = changeSettings(db);
  const audited = audit && currentChangeContext().audit;
  return events || audited ? { audit: audited } : null;
}

const PROCESS = randomBytes(4).toString('hex');
let lastMs = 0;
let counter = 0;

/**
 * A new intent id: sortable by time of creation (monotonic within a process, by the millisecond
 * across processes), unique across processes.
 */
export function newIntentId(): string {
  lastMs = Math.max(lastMs, Date.now());
  counter = (counter + 1) % 1e9;
  return `${String(lastMs).padStart(13, '0')}.${String(counter).padStart(9, '0')}.${PROCESS}`;
}

export interface Intent {
  id: string;
  /** When it was written (this process's clock), for the late-write check in tenant.ts. */
  at: number;
  doc: OutboxDoc;
}

const outbox = (db: Db) => db.collection<OutboxDoc>(COLLECTIONS.outbox, MAJORITY);

/** Writes the intent of a write that may change `keys` of `collection` (step 1 above). */
export async function openIntent(db: Db, collection: CollectionName, org: string, keys: string[], before: (Document | null)[] | undefined): Promise<Intent> {
  const context = currentChangeContext();
  const doc: OutboxDoc = {
    _id: newIntentId(),
    c: collection,
    o: org,
    k: keys,
    t: new Date(),
    cause: context.cause,
    actor: context.actor,
    rid: context.requestId,
    audit: before !== undefined,
    // Only a process that knows its settings asks (the service; `cag` reads no CHANGES_TOPIC):
    // a relay that can publish publishes every intent anyway.
    ...(settings.get(db.databaseName)?.events ? { e: true } : {}),
    ...(before !== undefined ? { b: before } : {}),
  };
  await outbox(db).insertOne(doc);
  return { id: doc._id, at: Date.now(), doc };
}

/** The same intent again under a new id, for a write that landed after its intent may have been resolved. */
export async function reopenIntent(db: Db, intent: Intent): Promise<Intent> {
  const doc = { ...intent.doc, _id: newIntentId(), t: new Date() };
  await outbox(db).insertOne(doc);
  return { id: doc._id, at: Date.now(), doc };
}

/** Forgets an intent whose write was refused or changed nothing. */
export async function dropIntent(db: Db, intent: Intent): Promise<void> {
  await outbox(db).deleteOne({ _id: intent.id });
}

/** Narrows an intent to the records its write did change (an insertMany that skipped duplicates). */
export async function narrowIntent(db: Db, intent: Intent, keys: string[]): Promise<void> {
  const index = new Map(intent.doc.k.map((k, i) => [k, i]));
  const b = intent.doc.b ? keys.map((k) => intent.doc.b![index.get(k)!] ?? null) : undefined;
  await outbox(db).updateOne({ _id: intent.id }, { $set: { k: keys, ...(b ? { b } : {}) } });
}

/** The oldest `limit` intents, oldest first. */
export function readOutbox(db: Db, limit: number): Promise<OutboxDoc[]> {
  return outbox(db).find({}).sort({ _id: 1 }).limit(limit).toArray();
}

export function countOutbox(db: Db): Promise<number> {
  return outbox(db).countDocuments({});
}

/** Deletes resolved intents. */
export async function deleteIntents(db: Db, ids: string[]): Promise<void> {
  if (ids.length > 0) await outbox(db).deleteMany({ _id: { $in: ids } });
}

/**
 * The records as they are now, by `collection/_id`, whatever their organization (the relay works
 * for every organization, and a record may have moved). Key lookups, up to IN_LIMIT a query (an
 * indexed lookup on both servers): an import's intent names thousands of records, and a query
 * each took the relay's step past its bound on a busy database.
 */
export async function readRecords(db: Db, wanted: Iterable<readonly [CollectionName, string]>): Promise<Map<string, Document | null>> {
  const out = new Map<string, Document | null>();
  const keysOf = new Map<CollectionName, Set<string>>();
  for (const [c, k] of wanted) keysOf.set(c, (keysOf.get(c) ?? new Set()).add(k));
  for (const [c, keys] of keysOf) {
    const all = [...keys];
    for (let i = 0; i < all.length; i += IN_LIMIT) {
      const slice = all.slice(i, i + IN_LIMIT);
      for (const k of slice) out.set(recordKey(c, k), null);
      for (const doc of await db
        .collection<{ _id: string }>(c)
        .find({ _id: { $in: slice } })
        .toArray())
        out.set(recordKey(c, doc._id), doc);
    }
  }
  return out;
}

export const recordKey = (collection: string, key: string) => `${collection}/${key}`;

/** Tells a relay in this process that an intent's write is done, so it need not wait for its next poll. */
export const outboxSignals = new EventEmitter();
outboxSignals.setMaxListeners(0);

export function signalDone(db: Db): void {
  outboxSignals.emit('done', db.databaseName);
}
