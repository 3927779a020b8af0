import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AnyBulkWriteOperation, Db, Document } from 'mongodb';
import type { Logger } from '../log';
import { pause } from '../retry';
import { COLLECTIONS, type CourseRecordDoc, type LearnerRecordDoc, type MembershipDoc } from './collections';
import { legacyCourseHistory } from './course-records';
import { UPDATES_PER_COMMAND } from './dialect';
import { acquireLease, releaseLease, renewLease } from './lease';
import { legacyLearnerHistory } from './user-records';

/**
 * Upgrades of stored data (docs/operations.md, "Upgrades"): one-time changes to records stored by
 * earlier versions of the service. Cross-organization by nature, like the indexes: they change
 * bookkeeping only, never an organization's data, and record no change.
 *
 * Once per database: one process at a time runs them, under the lease `upgrades`
 * (src/db/lease.ts, as the change relay holds its own); every other process of this version waits
 * (not ready, saying why, from the progress the holder writes) until they are marked done. The
 * database records its shape (`{_id: 'shape', v, floor}` in `upgrades`: how many upgrades it has
 * been through, and the lowest shape a process must know to serve on it). Upgrades are expand, then
 * contract: an expand upgrade leaves data that processes of the shape before it still serve
 * correctly (they keep serving during it and after a rollback), a contract upgrade raises the
 * floor, and a process that knows less than the floor refuses to write (not ready), so it stops
 * once a newer version begins a contract. A holder that dies leaves its progress; the next holder
 * resumes it.
 *
 * An upgrade reads its collection in passes: each pass streams every record in bounded batches
 * (no command waits for a whole collection to be read, whatever the driver's socket timeout) and
 * upgrades those still in the old shape, each on the condition that it still is. The first pass
 * resumes where a holder that died left it; the passes after it start from the beginning, until
 * one finds nothing to upgrade: so a record an older process wrote during the upgrade (before it
 * noticed the new shape) is upgraded too.
 */

/** One upgrade: which records are of the old shape, and the write that brings one to the new shape. */
export interface Upgrade {
  name: string;
  collection: string;
  /** The collection its writes go to, when not the one it reads. */
  target?: string;
  /** What its records are called in progress reports ("users"). */
  unit: string;
  /** The fields a pass reads of each record: what `isOld` and `upgrade` need. */
  projection: Document;
  isOld(doc: Document): boolean;
  /** What the writes of a batch of old records need from elsewhere (one read per batch). */
  prepare?(db: Db, docs: Document[]): Promise<unknown>;
  /** Conditional on the record still being of the old shape (a newer write is never undone). */
  upgrade(doc: Document, prepared?: unknown): AnyBulkWriteOperation<Document>;
  /**
   * An expand upgrade: the lowest shape whose processes still serve correctly on the data it
   * leaves (they ignore what it adds; what they write meanwhile this version reads as it is, and a
   * later contract upgrade brings it over). Absent: a contract, which only processes that know it
   * may serve (its position in the list); older ones stop before its first pass.
   */
  servesFrom?: number;
}

/**
 * A course deleted before courses kept their history left a tombstone (`course:<key>`) and no
 * record: it becomes a record in no organization whose history is the deletion (its floor), so
 * that an older or redelivered event still finds the course deleted (docs/event-core.md). A
 * record there (the course created again after the tombstone) stays as it is.
 */
export const COURSE_TOMBSTONES: Upgrade = {
  name: 'course-tombstones',
  collection: COLLECTIONS.tombstones,
  target: COLLECTIONS.courses,
  unit: 'tombstones',
  projection: { _id: 1, event_time: 1, event_ids: 1 },
  isOld: (stone) => typeof stone._id === 'string' && stone._id.startsWith('course:'),
  upgrade: (stone) => {
    const key = (stone._id as string).slice('course:'.length);
    const record = { _id: key, id: key, org: null, name: '', event_time: stone.event_time as string };
    return {
      updateOne: {
        filter: { _id: key },
        update: {
          $setOnInsert: {
            ...record,
            h: legacyCourseHistory(record),
            rev: 1,
            since: '',
            legacy_ids: stone.event_ids ?? [],
            is_public: 0,
            linked: 0,
            facts_v: 0,
          },
        },
        upsert: true,
      },
    } as unknown as AnyBulkWriteOperation<Document>;
  },
};

/** A course stored before courses kept their history: its version becomes its history's floor (course-records.ts `legacyCourseHistory`). */
export const COURSE_HISTORIES: Upgrade = {
  name: 'course-histories',
  collection: COLLECTIONS.courses,
  unit: 'courses',
  projection: { _id: 1, org: 1, name: 1, event_time: 1, event_ids: 1, h: 1 },
  isOld: (course) => course.h === undefined,
  upgrade: (course) => ({
    updateOne: {
      filter: { _id: course._id, h: { $exists: false } },
      update: {
        $set: { h: legacyCourseHistory(course as CourseRecordDoc), rev: 1, since: '', legacy_ids: course.event_ids ?? [] },
        $unset: { event_n: '', event_ids: '', prov: '' },
      },
    },
  }),
};

/** A link or public record made before courses kept their history began before any incarnation the history knows (`born` ''). */
const childBirths = (name: string, collection: string): Upgrade => ({
  name,
  collection,
  unit: 'records',
  projection: { _id: 1, born: 1 },
  isOld: (child) => child.born === undefined,
  upgrade: (child) => ({ updateOne: { filter: { _id: child._id, born: { $exists: false } }, update: { $set: { born: '' }, $unset: { born_v: '' } } } }),
});

/**
 * A learner retired before learners kept their history left a tombstone (`user:<id>`) and no
 * record: it becomes a record in no organization whose history is the retirement (its floor), so
 * that an older or redelivered event still finds the learner retired. A record there (the id
 * registered again after the tombstone) stays as it is.
 */
export const USER_TOMBSTONES: Upgrade = {
  name: 'user-tombstones',
  collection: COLLECTIONS.tombstones,
  target: COLLECTIONS.users,
  unit: 'tombstones',
  projection: { _id: 1, event_time: 1, event_ids: 1 },
  isOld: (stone) => typeof stone._id === 'string' && stone._id.startsWith('user:'),
  upgrade: (stone) => {
    const id = Number((stone._id as string).slice('user:'.length));
    const profile = { username: '', name: '', email: '', email_lower: '', is_active: false, is_staff: false, is_site_admin: false };
    const record = { org: null, event_time: stone.event_time as string, ...profile };
    return {
      updateOne: {
        filter: { _id: String(id) },
        update: {
          $setOnInsert: {
            _id: String(id),
            id,
            ...record,
            h: legacyLearnerHistory(record, null),
            rev: 1,
            projected: 1,
            since: '',
            legacy_ids: stone.event_ids ?? [],
            listed: 1,
            grp: 0,
            member: 0,
            facts_v: 0,
          },
        },
        upsert: true,
      },
    } as unknown as AnyBulkWriteOperation<Document>;
  },
};

/** What learners stored before their history kept beside their version (versions, kept events, the activation log and its settling). */
const EARLIER_LEARNER_FIELDS = [
  'event_n',
  'event_ids',
  'prov',
  'act_log',
  'log_n',
  'settled_n',
  'removed_v',
  'removed_i',
  'floor_v',
  'floor_open',
  'admin_v',
  'indexed_t',
  'act_v',
  'act_done',
  'act_email',
  'act_seen_v',
  'act_seen_email',
  'deact_v',
  'deact_min_v',
  'act_min_v',
];

/**
 * A learner stored before learners kept their history: its version becomes its history's floor
 * with the membership it has (learners.ts `legacyLearnerHistory`), whose projection is already
 * in place (`projected`). Its activation period is closed while it is active (its activation's
 * rules were applied then) and open while it is not.
 */
export const LEARNER_HISTORIES: Upgrade = {
  name: 'learner-histories',
  collection: COLLECTIONS.users,
  unit: 'users',
  projection: { _id: 1, org: 1, event_time: 1, event_ids: 1, username: 1, name: 1, email: 1, is_active: 1, is_staff: 1, is_site_admin: 1, h: 1 },
  isOld: (user) => user.h === undefined,
  prepare: async (db, users) => {
    const docs = await db
      .collection<MembershipDoc>(COLLECTIONS.memberships)
      .find({ _id: { $in: users.map((u) => u._id as string) } }, { projection: { _id: 1, org: 1, group: 1, automatic: 1 } })
      .toArray();
    return new Map(docs.map((m) => [m._id, m]));
  },
  upgrade: (user, prepared) => {
    const found = (prepared as Map<string, MembershipDoc>).get(user._id as string);
    const membership = found && found.org === user.org ? found : null;
    return {
      updateOne: {
        filter: { _id: user._id, h: { $exists: false } },
        update: {
          $set: {
            h: legacyLearnerHistory(user as LearnerRecordDoc, membership),
            rev: 1,
            projected: 1,
            since: '',
            left: [],
            legacy_ids: user.event_ids ?? [],
            m: membership && { group: membership.group, auto: membership.automatic, born: '' },
          },
          $unset: Object.fromEntries(EARLIER_LEARNER_FIELDS.map((k) => [k, ''])),
        },
      },
    };
  },
};

/** This version's upgrades, in order; the shape of a database that has been through them all is their count. */
export const UPGRADES: readonly Upgrade[] = [
  COURSE_TOMBSTONES,
  COURSE_HISTORIES,
  childBirths('link-births', COLLECTIONS.groupCourses),
  childBirths('public-course-births', COLLECTIONS.publicCourses),
  USER_TOMBSTONES,
  LEARNER_HISTORIES,
];

/**
 * The lowest shape a process must know to serve on data that has been through `upgrades` (those
 * of them `through` says, each at its place in the list). An upgrade's `servesFrom` is at most its
 * own place: a floor above the list would refuse the version's own data, for good.
 */
export function servingFloor(upgrades: readonly Upgrade[], through: (u: Upgrade) => boolean = () => true): number {
  return upgrades.reduce((floor, u, i) => {
    if (u.servesFrom !== undefined && u.servesFrom > i + 1) throw new Error(`upgrade ${u.name}: servesFrom ${u.servesFrom} is above its place (${i + 1})`);
    return through(u) ? Math.max(floor, u.servesFrom ?? i + 1) : floor;
  }, 0);
}

/** Whether processes that do not know `upgrade` (at its place in `upgrades`) still serve on the data it leaves. */
const isExpand = (upgrades: readonly Upgrade[], upgrade: Upgrade) => (upgrade.servesFrom ?? Number.POSITIVE_INFINITY) < upgrades.indexOf(upgrade) + 1;

export const UPGRADE_LEASE = 'upgrades';
const SHAPE = 'shape';
const PROGRESS = 'progress';
/** Records read per batch of a pass: one answer of the server each, quick whatever the collection's size. */
const BATCH = 500;

interface DoneDoc {
  _id: string;
  at: Date;
}
interface ShapeDoc {
  _id: typeof SHAPE;
  v: number;
  /** The lowest shape a process must know to serve (absent, from versions before it: v). */
  floor?: number;
  at: Date;
}
/** The holder's progress through the upgrade it runs (one at a time). */
interface ProgressDoc {
  _id: typeof PROGRESS;
  upgrade: string;
  pass: number;
  /** Records read by this pass so far (where a new holder resumes the first pass). */
  scanned: number;
  /** The collection's size when the pass began (an estimate). */
  total: number;
  /** Records upgraded by this pass so far. */
  upgraded: number;
  at: Date;
}
type UpgradesDoc = DoneDoc | ShapeDoc | ProgressDoc;

const marks = (db: Db) => db.collection<UpgradesDoc>(COLLECTIONS.upgrades);
const count = (n: number) => n.toLocaleString('en-US');

/** Where the database stands against the upgrades a process knows. */
export interface StoredShape {
  /** How many upgrades the database has been through, or is going through (0: none recorded). */
  shape: number;
  /** The lowest shape a process must know to serve on it. */
  floor: number;
}

export interface UpgradeState extends StoredShape {
  /** This process's upgrades the database has not been through. */
  pending: Upgrade[];
  /** The holder's progress, when an upgrade is under way. */
  progress: ProgressDoc | null;
}

export async function readUpgradeState(db: Db, upgrades: readonly Upgrade[] = UPGRADES): Promise<UpgradeState> {
  const docs = await marks(db).find({}).toArray();
  const byId = new Map(docs.map((d) => [d._id, d]));
  // A database marked with every upgrade but without a shape (upgraded by a version that did not
  // record one) is brought to its shape by the lease's holder, without reading any record.
  const pending = upgrades.filter((u) => !byId.has(u.name));
  return { ...shapeOf(byId.get(SHAPE) as ShapeDoc | undefined), pending, progress: (byId.get(PROGRESS) as ProgressDoc | undefined) ?? null };
}

const shapeOf = (doc: ShapeDoc | null | undefined): StoredShape => ({ shape: doc?.v ?? 0, floor: doc?.floor ?? doc?.v ?? 0 });

/** Why a process of `known` shape must not write to a database of `stored` shape, or null when it may. */
export function newerShapeReason(stored: StoredShape, known: number): string | null {
  return stored.floor > known ? `stored data is of shape ${stored.shape}, newer than this version knows (${known}): a newer version has upgraded it` : null;
}

/** The readiness reason while `state` has upgrades pending. */
function waitingReason(state: UpgradeState): string {
  const p = state.progress;
  const upgrade = p ? state.pending.find((u) => u.name === p.upgrade) : undefined;
  if (p && upgrade) {
    const pass = p.pass > 1 ? `, pass ${p.pass}` : '';
    return `upgrade ${p.upgrade}: ${count(p.scanned)} of ${count(p.total)} ${upgrade.unit}${pass}`;
  }
  return `upgrade ${state.pending.map((u) => u.name).join(', ')}: waiting to start`;
}

/** The database's shape is newer than this process knows: it must not write (docs/operations.md). */
export class NewerStoredShape extends Error {
  override name = 'NewerStoredShape';
}

export interface BringCurrentOptions {
  db: Db;
  log: Logger;
  upgrades?: readonly Upgrade[];
  /** The lease's length; the holder renews it every third of it. */
  leaseMs?: number;
  /** How often a waiting process reads the holder's progress. */
  pollMs?: number;
  /**
   * How long after raising the shape the holder waits before the pass that confirms no record of
   * the old shape is left, when processes that know shapes may still run an older one: they notice
   * the new shape within their check (SHAPE_CHECK_MS) and finish what is in flight.
   */
  settleMs?: number;
  signal?: AbortSignal;
  /** Records read per batch (default BATCH). */
  batchSize?: number;
  /** Told every change of the reason this process waits (null: current). */
  onWaiting?(reason: string | null): void;
  /** Tests: called after each batch of a pass (after its writes and its progress). */
  afterBatch?(upgrade: Upgrade, pass: number, progress: ProgressDoc): Promise<void>;
}

/** How often a running process reads the stored shape (and how long an upgrade lets older processes notice it). */
export const SHAPE_CHECK_MS = 5000;
const DEFAULT_SETTLE_MS = 2 * SHAPE_CHECK_MS;

/**
 * Returns once the database's stored data is in this version's shape: runs the pending upgrades
 * (holding the lease) or waits for the process that holds it, taking over when its lease expires.
 * Throws NewerStoredShape when the database is newer than this version; a database failure
 * throws (the caller retries: the progress stays). Returns whether this process ran an upgrade.
 */
export async function bringStoredDataCurrent(opts: BringCurrentOptions): Promise<boolean> {
  const { db } = opts;
  const upgrades = opts.upgrades ?? UPGRADES;
  const leaseMs = opts.leaseMs ?? 15_000;
  const pollMs = opts.pollMs ?? 500;
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  let reported: string | null | undefined;
  const waiting = (reason: string | null) => {
    if (reason === reported) return;
    reported = reason;
    opts.onWaiting?.(reason);
  };
  let ran = false;
  for (;;) {
    opts.signal?.throwIfAborted();
    const state = await readUpgradeState(db, upgrades);
    const newer = newerShapeReason(state, upgrades.length);
    if (newer) {
      waiting(newer);
      throw new NewerStoredShape(newer);
    }
    // A newer shape this version still serves: a newer version's expand upgrades, done or under way.
    if (state.pending.length === 0 && state.shape >= upgrades.length) {
      if (state.shape > upgrades.length)
        opts.log.info({ shape: state.shape, floor: state.floor, known: upgrades.length }, 'stored data is of a newer shape this version still serves');
      waiting(null);
      return ran;
    }
    waiting(waitingReason(state));
    if (await acquireLease(db, UPGRADE_LEASE, owner, leaseMs)) {
      try {
        ran = (await runUpgrades({ ...opts, upgrades, leaseMs, owner, waiting })) || ran;
      } finally {
        await releaseLease(db, UPGRADE_LEASE, owner).catch(() => undefined);
      }
      continue; // read the state again: done, or the lease was lost
    }
    await pause(pollMs, opts.signal);
  }
}

class LeaseLost extends Error {}

/** The holder's work: raise the shape, then each pending upgrade's passes. False when the lease was lost. */
async function runUpgrades(
  opts: BringCurrentOptions & { upgrades: readonly Upgrade[]; leaseMs: number; owner: string; waiting(reason: string | null): void },
): Promise<boolean> {
  const { db, log, upgrades, leaseMs, owner } = opts;
  let lost = false;
  const renewer = setInterval(() => {
    renewLease(db, UPGRADE_LEASE, owner, leaseMs).then(
      (seq) => {
        if (seq === null) lost = true;
      },
      () => undefined, // the database is away: the pass fails and says so
    );
  }, leaseMs / 3);
  renewer.unref();
  const holding = () => {
    if (lost) throw new LeaseLost();
    opts.signal?.throwIfAborted();
  };
  try {
    const before = await readUpgradeState(db, upgrades);
    // The shape and its floor first: processes below the floor (older than a contract upgrade)
    // that know shapes stop writing from now on; those an expand upgrade still serves go on.
    const floor = await raiseShape(db, upgrades);
    const announced = Date.now();
    // Only a database that had a shape can have processes that watch it, and only a floor above the
    // one the done upgrades set stops them; nothing to wait for otherwise. Measured from the done
    // upgrades, not the stored floor: a holder that raised it and stopped (a resumed contract) left
    // older processes that may not have noticed yet.
    const settledFloor = servingFloor(upgrades, (u) => !before.pending.includes(u));
    const settleMs = before.shape > 0 && floor > settledFloor ? (opts.settleMs ?? DEFAULT_SETTLE_MS) : 0;
    log.info({ shape: upgrades.length, floor, was: before.shape, pending: before.pending.map((u) => u.name) }, 'upgrading stored data');
    for (const upgrade of before.pending) {
      const resume = before.progress?.upgrade === upgrade.name ? before.progress : null;
      const expand = isExpand(upgrades, upgrade);
      for (let pass = resume?.pass ?? 1; ; pass++) {
        if (pass > 1) {
          const wait = announced + settleMs - Date.now();
          if (wait > 0) await pause(wait, opts.signal);
        }
        const settled = Date.now() >= announced + settleMs;
        const from = resume && pass === resume.pass ? resume.scanned : 0;
        const upgraded = await runPass(opts, upgrade, pass, from, holding);
        log.info({ upgrade: upgrade.name, pass, upgraded }, `upgrade ${upgrade.name}: pass ${pass} upgraded ${upgraded} ${upgrade.unit}`);
        // Done after a whole pass begun once the processes below the floor had stopped writing
        // (settled): for a contract, one that found nothing of the old shape; for an expand, any,
        // since the older processes it serves may go on writing the old shape (a contract takes it).
        if (from === 0 && settled && (expand || upgraded === 0)) break;
      }
      holding();
      await marks(db).updateOne({ _id: upgrade.name }, { $setOnInsert: { at: new Date() } }, { upsert: true });
      await marks(db).deleteOne({ _id: PROGRESS, upgrade: upgrade.name } as never);
      log.info({ upgrade: upgrade.name }, `upgrade ${upgrade.name} done`);
    }
    return before.pending.length > 0;
  } catch (err) {
    if (err instanceof LeaseLost) {
      log.warn({ owner }, 'upgrade lease lost (another process took it over); waiting for it');
      return false;
    }
    throw err;
  } finally {
    clearInterval(renewer);
  }
}

/**
 * One pass of `upgrade`: every record, from the `from`-th (a resumed pass) in the collection's
 * natural order, read a batch at a time; those of the old shape upgraded. A record a deletion moved
 * past the resume point is read by the next pass, which starts from the beginning. Returns how
 * many it upgraded.
 */
async function runPass(
  opts: BringCurrentOptions & { waiting(reason: string | null): void },
  upgrade: Upgrade,
  pass: number,
  from: number,
  holding: () => void,
): Promise<number> {
  const { db, log } = opts;
  const records = db.collection(upgrade.collection);
  const target = db.collection(upgrade.target ?? upgrade.collection);
  const progress: ProgressDoc = {
    _id: PROGRESS,
    upgrade: upgrade.name,
    pass,
    scanned: from,
    total: await records.estimatedDocumentCount(),
    upgraded: 0,
    at: new Date(),
  };
  const save = async () => {
    progress.at = new Date();
    await marks(db).replaceOne({ _id: PROGRESS }, progress, { upsert: true });
    opts.waiting(`upgrade ${upgrade.name}: ${count(progress.scanned)} of ${count(progress.total)} ${upgrade.unit}${pass > 1 ? `, pass ${pass}` : ''}`);
  };
  await save();
  log.info({ upgrade: upgrade.name, pass, from, total: progress.total }, `upgrade ${upgrade.name}: pass ${pass} begins`);
  const batchSize = opts.batchSize ?? BATCH;
  const cursor = records.find({}, { projection: upgrade.projection, batchSize, ...(from > 0 ? { skip: from } : {}) });
  let lastLog = Date.now();
  try {
    let batch: Document[] = [];
    const flush = async () => {
      holding(); // no write after the lease is lost or a stop came
      const olds = batch.filter((d) => upgrade.isOld(d));
      const prepared = olds.length > 0 ? await upgrade.prepare?.(db, olds) : undefined;
      const old = olds.map((d) => upgrade.upgrade(d, prepared));
      for (let i = 0; i < old.length; i += UPDATES_PER_COMMAND) {
        const result = await target.bulkWrite(old.slice(i, i + UPDATES_PER_COMMAND), { ordered: false });
        progress.upgraded += result.modifiedCount;
      }
      progress.scanned += batch.length;
      batch = [];
      await save();
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        log.info(
          { upgrade: upgrade.name, pass, scanned: progress.scanned, total: progress.total, upgraded: progress.upgraded },
          `upgrade ${upgrade.name}: progress`,
        );
      }
      await opts.afterBatch?.(upgrade, pass, { ...progress });
    };
    for await (const doc of cursor) {
      batch.push(doc);
      if (batch.length === batchSize) await flush();
    }
    await flush();
  } finally {
    await cursor.close().catch(() => undefined);
  }
  return progress.upgraded;
}

/**
 * Marks the database as through every upgrade, without reading its records: for a database whose
 * records were all written in this version's shape (the bench's seeds), as a real deployment's would be.
 */
export async function markStoredDataCurrent(db: Db, upgrades: readonly Upgrade[] = UPGRADES): Promise<void> {
  for (const u of upgrades) await marks(db).updateOne({ _id: u.name }, { $setOnInsert: { at: new Date() } }, { upsert: true });
  await raiseShape(db, upgrades);
}

/** Records the shape `upgrades` give and their floor (never lowering either); returns the floor. */
async function raiseShape(db: Db, upgrades: readonly Upgrade[]): Promise<number> {
  const floor = servingFloor(upgrades);
  await marks(db).updateOne({ _id: SHAPE }, { $max: { v: upgrades.length, floor }, $setOnInsert: { at: new Date() } } as never, { upsert: true });
  return floor;
}

/** The database's recorded shape and floor (0: none), for a running process's periodic check. */
export async function storedShape(db: Db): Promise<StoredShape> {
  return shapeOf((await marks(db).findOne({ _id: SHAPE })) as ShapeDoc | null);
}
