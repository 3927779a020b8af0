// src/db/upgrades.ts against the real local MongoDB-protocol server: users stored before
// activations were recorded keep the rules they were given (docs/events.md, Activations), and
// upgrades run once per database, under a lease, while other processes wait (docs/operations.md).
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { bringStoredDataCurrent, SHAPE_CHECK_MS, storedShape, UPGRADES, type Upgrade } from '../../src/db/upgrades';
import { deleteCourse, upsertCourse } from '../../src/domain/courses';
import { applyUserData, type UserEventKind } from '../../src/domain/user-event-data';
import { createLogger } from '../../src/log';
import { type Running, startService, type UpgradeOptions } from '../../src/runtime';
import { builtProgram } from '../helpers/built';
import { day, groupWithRule, membershipOf, userOf } from '../helpers/domain';
import { waitFor } from '../helpers/events';
import { client as http } from '../helpers/http';
import { killAll, type ServiceProcess, spawnService } from '../helpers/service-process';
import { KAFKA_BROKERS, MONGO_URL, testConfig, uniqueName } from '../helpers/stack';
import { freePort, tcpProxy } from '../helpers/tcp-proxy';
import { siteAdminToken } from '../helpers/tokens';

const silent = createLogger('silent');
/** The upgrades as start-up runs them, without the pause that lets older processes notice a new shape (none run here). */
const upgradeStoredRecords = (target: Db, extra: Partial<Parameters<typeof bringStoredDataCurrent>[0]> = {}) =>
  bringStoredDataCurrent({ db: target, log: silent, settleMs: 0, pollMs: 50, ...extra });

let client: MongoClient;
let db: Db;
let a: Tenant;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('upgrades'));
  await ensureIndexes(db);
  a = new Tenant(db, 'org-a');
  await groupWithRule(a, 'school.edu');
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

const send = (kind: UserEventKind, id: number, time: string, eventId: string, is_active = true) =>
  applyUserData(
    db,
    { user: { id, is_active, pii: { username: `user${id}`, email: `user${id}@school.edu`, name: `User ${id}` } } },
    { time, id: eventId },
    kind,
    a.org,
  );

/** A user as an earlier version of the service stored it: no history, its version and earlier bookkeeping instead. */
async function legacyUser(id: number, is_active: boolean, d = 1) {
  await send('update', id, day(d), `legacy-${id}`, is_active);
  await db.collection(COLLECTIONS.users).updateOne({ _id: String(id) } as never, {
    $unset: { h: '', rev: '', since: '', left: '', projected: '', m: '', legacy_ids: '' },
    $set: { event_n: 1, act_v: '0000#0000', act_done: true, act_log: [], log_n: 1 },
  });
}

/** The learner's activation period as its history's floor says (open: their next activation applies the rules). */
const floorOf = async (id: number) => (await userOf(a, id))?.h?.floor as { place: { at: string }; state: { periodOpen: boolean } } | undefined;

test('an active user stored before the history gets no rule at its next login; an inactive one gets them at its activation', async () => {
  await legacyUser(1, true);
  await legacyUser(2, false);
  await upgradeStoredRecords(db);
  expect(await floorOf(1)).toMatchObject({ place: { at: day(1) }, state: { periodOpen: false } });
  for (const field of ['act_v', 'act_log', 'log_n', 'event_n']) expect(await userOf(a, 1)).not.toHaveProperty(field); // the earlier bookkeeping goes
  expect(await floorOf(2)).toMatchObject({ state: { periodOpen: true } });

  // The administrator had removed user 1's membership; the rules were applied at its activation back then.
  expect(await send('registration', 1, day(3), 'login-1')).toBe('applied');
  expect(await membershipOf(a, 1)).toBeNull();
  expect(await send('activation', 2, day(3), 'activation-2')).toBe('applied');
  expect(await membershipOf(a, 2)).not.toBeNull();

  // Deactivated and activated again: a new activation, so the rules apply again.
  await send('update', 1, day(4), 'deactivated-1', false);
  await send('activation', 1, day(5), 'activation-1');
  expect(await membershipOf(a, 1)).not.toBeNull();
});

test('an upgrade runs once: a start after it leaves a user stored later as it is', async () => {
  await upgradeStoredRecords(db);
  const upgrades = await db.collection(COLLECTIONS.upgrades).countDocuments();
  expect(upgrades).toBeGreaterThan(0);
  await legacyUser(3, true);
  await upgradeStoredRecords(db);
  expect((await userOf(a, 3))?.h).toBeUndefined();
  expect(await db.collection(COLLECTIONS.upgrades).countDocuments()).toBe(upgrades);
  // Not upgraded, it is read as the upgrade would have written it (learners.ts): its next login applies no rule.
  await send('registration', 3, day(3), 'login-3');
  expect(await membershipOf(a, 3)).toBeNull();
  expect(await floorOf(3)).toMatchObject({ place: { at: day(1) }, state: { periodOpen: false } });
});

test('no event older than an upgraded user applies the rules: its past is not known (they may have been applied, and an administrator may have changed the result since)', async () => {
  await legacyUser(4, false, 5);
  await db.collection(COLLECTIONS.upgrades).deleteOne({ _id: 'learner-histories' } as never);
  await upgradeStoredRecords(db);
  expect(await send('activation', 4, day(2), 'late-4')).toBe('stale');
  expect(await membershipOf(a, 4)).toBeNull();
  // Not upgraded (a user stored now), the same late activation applies the rules of its period.
  await send('update', 5, day(5), 'inactive-5', false);
  expect(await send('activation', 5, day(2), 'late-5')).toBe('stale');
  expect(await membershipOf(a, 5)).not.toBeNull();
});

test('the learner-histories upgrade of more users than one update command may carry (FerretDB answers none of 100 statements: src/db/dialect.ts)', async () => {
  const many = client.db(uniqueName('upgrades-many'));
  try {
    await ensureIndexes(many);
    const users = Array.from({ length: 150 }, (_, i) => ({
      _id: String(i + 1),
      id: i + 1,
      org: 'org-a',
      event_time: day(1),
      event_n: 1,
      username: `u${i + 1}`,
      name: 'U',
      email: `u${i + 1}@school.edu`,
      is_active: i % 2 === 0,
    }));
    await many.collection(COLLECTIONS.users).insertMany(users as never);
    await many.collection(COLLECTIONS.memberships).insertOne({ _id: '3', id: 1, org: 'org-a', user: 3, group: 7, automatic: true } as never);
    await upgradeStoredRecords(many);
    const upgraded = await many
      .collection(COLLECTIONS.users)
      .find({ rev: 1 }, { projection: { h: 1, m: 1, is_active: 1, event_n: 1 } })
      .toArray();
    expect(upgraded).toHaveLength(150);
    expect(upgraded.every((u) => u.h.floor.place.at === day(1) && u.h.floor.state.periodOpen === !u.is_active && u.event_n === undefined)).toBe(true);
    // The membership it has is the floor's, and its projection is in place.
    expect(upgraded.find((u) => String(u._id) === '3')?.m).toEqual({ group: 7, auto: true, born: '' });
    expect(upgraded.filter((u) => u.m).map((u) => String(u._id))).toEqual(['3']);
  } finally {
    await many.dropDatabase();
  }
});

test('a user the current version writes (created by an active `user.updated`, no activation yet) is never taken for one of the old shape: its first activation applies the rules', async () => {
  await send('update', 6, day(1), 'updated-6', true);
  const written = await userOf(a, 6);
  expect(written?.h?.entries).toHaveLength(1);
  // The upgrade runs again (its mark gone, as on a database restored from before it).
  await db.collection(COLLECTIONS.upgrades).deleteOne({ _id: 'learner-histories' } as never);
  await upgradeStoredRecords(db);
  expect(await userOf(a, 6)).toEqual(written);
  expect(await send('activation', 6, day(2), 'activation-6')).toBe('applied');
  expect(await membershipOf(a, 6)).not.toBeNull();
});

// --- Once per database, under a lease ----------------------------------------------------------

/** `n` users as a version before the history stored them (no `h`), from id `from`; `current`: as this version writes them. */
// Courses before they kept their history (docs/event-core.md): a course's version, its tombstone
// once deleted, and its links' `born_v`. The upgrade turns each into the history's floor.
test('courses stored before their history: a deleted one stays deleted against an older event, a redelivered event of a kept one is a duplicate, links follow the course', async () => {
  const target = client.db(uniqueName('upgrades-courses'));
  await ensureIndexes(target);
  const t = new Tenant(target, 'org-a');
  const raw = (name: string) => target.collection(name);
  const [kept, gone] = ['course-v1:org-a+KEPT+1', 'course-v1:org-a+GONE+1'];
  await raw(COLLECTIONS.courses).insertOne({
    _id: kept,
    org: 'org-a',
    id: kept,
    name: 'Kept',
    event_time: day(2),
    event_n: 1,
    event_ids: ['hash-of-c2'],
    is_public: 0,
    linked: 1,
    facts_v: 1,
  } as never);
  await raw(COLLECTIONS.tombstones).insertOne({ _id: `course:${gone}`, org: 'org-a', event_time: day(3), event_n: 1, event_ids: ['hash-of-d3'] } as never);
  await raw(COLLECTIONS.groupCourses).insertOne({ _id: `${kept}|1`, org: 'org-a', id: 901, course: kept, group: 1, born_v: `${day(2)}#0001` } as never);
  await upgradeStoredRecords(target);

  expect(await raw(COLLECTIONS.courses).findOne({ _id: kept } as never)).toMatchObject({
    org: 'org-a',
    name: 'Kept',
    rev: 1,
    since: '',
    legacy_ids: ['hash-of-c2'],
  });
  expect((await raw(COLLECTIONS.courses).findOne({ _id: kept } as never))?.event_ids).toBeUndefined();
  expect(await raw(COLLECTIONS.groupCourses).findOne({ _id: `${kept}|1` } as never)).toMatchObject({ born: '' });
  // The tombstone's course: in no organization; an older catalog event does not bring it back.
  expect((await raw(COLLECTIONS.courses).findOne({ _id: gone } as never))?.org ?? null).toBeNull();
  expect(await upsertCourse(t, { key: gone, name: 'Back?' }, { time: day(1), id: 'older' })).toBe('stale');
  expect(await t.collection(COLLECTIONS.courses).findById(gone)).toBeNull();
  // The course's own newest event again, known by its hashed identity: nothing changes.
  expect(await upsertCourse(t, { key: kept, name: 'Renamed?' }, { time: day(2), id: 'hash-of-c2' })).toBe('duplicate');
  expect(await t.collection(COLLECTIONS.courses).findById(kept)).toMatchObject({ name: 'Kept' });
  // A deletion now takes the link made before the history.
  expect(await deleteCourse(target, kept, { time: day(4), id: 'd4' })).toBe('applied');
  expect(await raw(COLLECTIONS.groupCourses).countDocuments({ course: kept })).toBe(0);
  await target.dropDatabase();
});

async function insertOldShapeUsers(target: Db, n: number, from = 1, shape: 'old' | 'current' = 'old') {
  for (let i = 0; i < n; i += 5000) {
    const docs = Array.from({ length: Math.min(5000, n - i) }, (_, j) => {
      const id = from + i + j;
      return {
        _id: String(id),
        id,
        org: 'org-a',
        event_time: day(1),
        event_n: 1,
        is_active: id % 2 === 0,
        ...(shape === 'current' ? { h: { seq: 1, entries: [], floor: null }, rev: 1 } : { act_v: '0000#0000', act_done: true }),
      };
    });
    await target.collection(COLLECTIONS.users).insertMany(docs as never, { ordered: false });
  }
}

const oldShapeLeft = (target: Db) => target.collection(COLLECTIONS.users).countDocuments({ h: { $exists: false } });

interface Started {
  running: Running;
  logs: string[];
  url: string;
}

/** The real service in this process on database `dbName`, its log lines kept. */
async function start(dbName: string, role: 'api' | 'all', upgrade: UpgradeOptions = {}): Promise<Started> {
  const config = testConfig({ MONGO_DB: dbName, SERVICE_ROLE: role, LOG_LEVEL: 'info' });
  const logs: string[] = [];
  const log = createLogger(config.LOG_LEVEL, { write: (line: string) => void logs.push(line) });
  const running = await startService(config, log, { upgrade: { pollMs: 100, ...upgrade } });
  running.ready.catch(() => undefined);
  return { running, logs, url: `http://127.0.0.1:${running.port}` };
}

const messages = (s: Started) => s.logs.map((l) => JSON.parse(l).msg as string);

test('three processes started together on a database without the mark: one runs the upgrade, the others wait not ready and saying why, all ready after it', async () => {
  const name = uniqueName('upgrades-three');
  const target = client.db(name);
  const started: Started[] = [];
  try {
    await ensureIndexes(target);
    await insertOldShapeUsers(target, 600);
    // The holder's first batch of users waits until the test has seen every process waiting.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let batches = 0;
    const afterBatch = async (upgrade: Upgrade) => {
      if (upgrade.name === 'learner-histories' && batches++ === 0) await released;
    };
    started.push(...(await Promise.all([start(name, 'all', { afterBatch }), start(name, 'api', { afterBatch }), start(name, 'api', { afterBatch })])));
    const token = await siteAdminToken('org-a');
    for (const s of started) {
      const probe = await waitFor(
        () => http(s.url).get('/readyz'),
        (r) => r.status === 503 && r.body.failing.some((f: string) => /^upgrade learner-histories: [\d,]+ of 600 users/.test(f)),
        30000,
      );
      expect(probe.body.detail).toMatch(/^Not ready: .*upgrade learner-histories: [\d,]+ of 600 users/);
      // Neither serving the API meanwhile...
      const api = await http(s.url, token).get('course-access-groups/');
      expect({ status: api.status, detail: api.body.detail }).toEqual({ status: 503, detail: expect.stringMatching(/^Not ready: upgrade learner-histories/) });
    }
    // ...nor consuming.
    expect((await http(started[0]!.url).get('/readyz')).body.failing).toContain('consumer');
    release();
    await Promise.all(started.map((s) => s.running.ready));
    for (const s of started) expect((await http(s.url).get('/readyz')).body).toEqual({ status: 'ready' });
    expect((await http(started[1]!.url, token).get('course-access-groups/')).status).toBe(200);
    // One scan in all: one first pass, in one process.
    if (process.env.DEBUG_UPG)
      for (const s of started)
        console.log(
          s.logs
            .map((l) => {
              const j = JSON.parse(l);
              return `${new Date(j.time).toISOString()} ${j.msg}`;
            })
            .join('\n'),
        );
    const firstPasses = started.flatMap(messages).filter((m) => m === 'upgrade learner-histories: pass 1 begins');
    expect(firstPasses).toHaveLength(1);
    expect(await oldShapeLeft(target)).toBe(0);
  } finally {
    await Promise.all(started.map((s) => s.running.stop()));
    await target.dropDatabase();
  }
}, 120000);

test('a scan longer than the driver socket timeout finishes instead of starting again: no command waits for the whole collection', async () => {
  const name = uniqueName('upgrades-slow');
  // A socket timeout far shorter than reading every user takes on the local stack (2 s or more:
  // the upgrade's find of users without a log, one command, timed out here until the scan read
  // in batches), far longer than a batch of 100.
  const short = new MongoClient(MONGO_URL, { socketTimeoutMS: 800 });
  const target = short.db(name);
  const logs: string[] = [];
  try {
    await ensureIndexes(client.db(name));
    // Users already in the current shape: one pass reads them all and finds nothing to upgrade.
    await insertOldShapeUsers(client.db(name), 8000, 1, 'current');
    await upgradeStoredRecords(target, { batchSize: 100, log: createLogger('info', { write: (line: string) => void logs.push(line) }) });
    const msgs = logs.map((l) => JSON.parse(l).msg);
    expect(msgs.filter((m) => m === 'upgrade learner-histories: pass 1 begins')).toHaveLength(1);
    expect(msgs.filter((m) => /^upgrade learner-histories: pass \d+ begins$/.test(m))).toHaveLength(1);
    expect(msgs).toContain('upgrade learner-histories done');
    expect(await target.collection(COLLECTIONS.upgrades).findOne({ _id: 'learner-histories' } as never)).not.toBeNull();
  } finally {
    await client.db(name).dropDatabase();
    await short.close();
  }
}, 120000);

test('a writer of the old shape during the upgrade (an older process) leaves no record of the old shape: the upgrade passes again until one finds none', async () => {
  const name = uniqueName('upgrades-writer');
  const target = client.db(name);
  try {
    await ensureIndexes(target);
    await insertOldShapeUsers(target, 250);
    let wrote = false;
    await upgradeStoredRecords(target, {
      batchSize: 100,
      afterBatch: async (_u, pass) => {
        if (pass !== 1 || wrote) return;
        wrote = true;
        // Behind the scan: a user it has upgraded rewritten in the old shape, and a new one.
        await target.collection(COLLECTIONS.users).updateOne({ _id: '1' } as never, { $unset: { h: '', rev: '' }, $set: { act_done: true } });
        await insertOldShapeUsers(target, 1, 5001);
      },
    });
    expect(wrote).toBe(true);
    expect(await oldShapeLeft(target)).toBe(0);
    expect(await target.collection(COLLECTIONS.users).findOne({ _id: '1' } as never)).toMatchObject({
      rev: 1,
      h: { floor: { place: { at: day(1), seq: 1 } } },
    });
  } finally {
    await target.dropDatabase();
  }
}, 120000);

test('an upgrade stopped half-way (its process stopped or dead) is resumed where it stopped by the next one, never started from nothing', async () => {
  const name = uniqueName('upgrades-resume');
  const target = client.db(name);
  try {
    await ensureIndexes(target);
    await insertOldShapeUsers(target, 250);
    const stop = new AbortController();
    await expect(
      upgradeStoredRecords(target, {
        batchSize: 100,
        signal: stop.signal,
        afterBatch: async (_u, _pass, progress) => {
          if (progress.scanned >= 200) stop.abort();
        },
      }),
    ).rejects.toThrow();
    expect(await oldShapeLeft(target)).toBe(50);
    const logs: string[] = [];
    await upgradeStoredRecords(target, { batchSize: 100, log: createLogger('info', { write: (line: string) => void logs.push(line) }) });
    const begins = logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'upgrade learner-histories: pass 1 begins');
    expect(begins.map((l) => l.from)).toEqual([200]);
    expect(await oldShapeLeft(target)).toBe(0);
  } finally {
    await target.dropDatabase();
  }
}, 60000);

/** A later version's upgrade (for these tests): marks every record of `collection`; `servesFrom` makes it an expand. */
const marking = (name: string, collection: string, unit: string, servesFrom?: number): Upgrade => ({
  name,
  collection,
  unit,
  projection: { _id: 1, later: 1 },
  isOld: (doc) => doc.later === undefined,
  upgrade: (doc) => ({ updateOne: { filter: { _id: doc._id, later: { $exists: false } }, update: { $set: { later: true } } } }),
  ...(servesFrom === undefined ? {} : { servesFrom }),
});

/** A later version's contract: marks every user. */
const LATER = marking('test-later', COLLECTIONS.users, 'users');

/** The shape a newer version's one more upgrade gives. */
const NEWER = UPGRADES.length + 1;

test('the stored shape: a process of an older version refuses to serve or consume once a newer version upgrades (not ready, saying why), and one started on a newer database never starts', async () => {
  const name = uniqueName('upgrades-shape');
  const target = client.db(name);
  const started: Started[] = [];
  try {
    await ensureIndexes(target);
    const token = await siteAdminToken('org-a');
    const current = await start(name, 'all', { shapeCheckMs: 100 });
    started.push(current);
    await current.running.ready;
    expect((await http(current.url, token).get('course-access-groups/')).status).toBe(200);

    // A newer version upgrades: the running process stops before the upgrade's confirming pass.
    await upgradeStoredRecords(target, { upgrades: [...UPGRADES, LATER], settleMs: 500 });
    const refused = await waitFor(
      () => http(current.url).get('/readyz'),
      (r) => r.status === 503,
      10000,
    );
    expect(refused.body.failing).toContain(
      `stored data is of shape ${NEWER}, newer than this version knows (${UPGRADES.length}): a newer version has upgraded it`,
    );
    const write = await http(current.url, token).post('course-access-groups/', { name: 'late', description: '' });
    expect(write.status).toBe(503);
    expect(current.running.relay.isLeader()).toBe(false);

    // A process of the older version started now never serves.
    const older = await start(name, 'api');
    started.push(older);
    const probe = await waitFor(
      () => http(older.url).get('/readyz'),
      (r) => r.status === 503 && r.body.failing.some((f: string) => f.startsWith(`stored data is of shape ${NEWER}`)),
      10000,
    );
    expect(probe.body.failing).not.toContain('database');
    expect((await http(older.url, token).get('course-access-groups/')).status).toBe(503);
    expect(await target.collection(COLLECTIONS.groups).countDocuments()).toBe(0);
  } finally {
    await Promise.all(started.map((s) => s.running.stop()));
    await target.dropDatabase();
  }
}, 60000);

/** `cag upgrade` of this version (as its Job runs it) on database `dbName`. */
const cagUpgrade = (dbName: string) =>
  new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(__dirname, '../../bin/cag.js'), 'upgrade'],
      { env: { ...process.env, MONGO_URL, MONGO_DB: dbName, LOG_LEVEL: 'silent' } },
      (err, _stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stderr }),
    );
  });

test('`cag upgrade` runs the upgrades as a job: exit 0 with what it did, exit 0 again with nothing to do, exit 4 on a newer database', async () => {
  const name = uniqueName('upgrades-cag');
  const target = client.db(name);
  const cag = cagUpgrade;
  try {
    await ensureIndexes(target);
    await insertOldShapeUsers(target, 100);
    const first = await cag(name);
    expect(first).toEqual({ code: 0, stderr: expect.stringContaining('stored data upgraded; it is current') });
    expect(first.stderr).toMatch(/upgrade learner-histories: [\d,]+ of 100 users/);
    expect(await oldShapeLeft(target)).toBe(0);
    expect(await cag(name)).toEqual({ code: 0, stderr: 'stored data is current; nothing to upgrade\n' });
    await upgradeStoredRecords(target, { upgrades: [...UPGRADES, LATER] });
    const newer = await cag(name);
    expect(newer.code).toBe(4);
    expect(newer.stderr).toContain(`stored data is of shape ${NEWER}, newer than this version knows (${UPGRADES.length})`);
  } finally {
    await target.dropDatabase();
  }
}, 90000);

test('`cag upgrade` started before the database answers (a fresh install) waits for it with backoff and succeeds once it is up; with CAG_UPGRADE_WAIT_SECONDS=0 it gives up at once with exit 1', async () => {
  const name = uniqueName('upgrades-wait');
  const target = client.db(name);
  // The stack's FerretDB behind a forwarder that listens only once `cag upgrade` has found nothing there.
  const ferret = new URL(MONGO_URL);
  const proxy = tcpProxy({ host: ferret.hostname, port: Number(ferret.port || 27017) }, await freePort());
  /** `cag upgrade` against the forwarder's port; `onStderr` sees its output as it comes. */
  const cag = (waitSeconds: string, onStderr: (all: string) => void = () => undefined) =>
    new Promise<{ code: number; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [join(__dirname, '../../bin/cag.js'), 'upgrade'], {
        env: { ...process.env, MONGO_URL: `mongodb://127.0.0.1:${proxy.port}/`, MONGO_DB: name, LOG_LEVEL: 'warn', CAG_UPGRADE_WAIT_SECONDS: waitSeconds },
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        onStderr(stderr);
      });
      child.on('close', (code) => resolve({ code: code ?? -1, stderr }));
    });
  try {
    await ensureIndexes(target);
    await insertOldShapeUsers(target, 20);
    const gaveUp = await cag('0');
    expect(gaveUp.code).toBe(1);
    expect(gaveUp.stderr).toContain('upgrade failed');
    expect(gaveUp.stderr).not.toContain('database not reachable yet; retrying');

    // The database comes up after the first try failed (before this change, that try was the last).
    let opening: Promise<void> | null = null;
    const done = await cag('60', (stderr) => {
      if (stderr.includes('database not reachable yet; retrying')) opening ??= proxy.open();
    });
    expect(opening).not.toBeNull();
    expect({ code: done.code, last: done.stderr.trimEnd().split('\n').at(-1) }).toEqual({ code: 0, last: 'stored data upgraded; it is current' });
    expect(await oldShapeLeft(target)).toBe(0);
  } finally {
    await proxy.cut();
    await target.dropDatabase();
  }
}, 90000);

/** A later version's expand upgrade (for these tests): marks every group, and this version still serves on what it leaves. */
const LATER_EXPAND = marking('test-later-expand', COLLECTIONS.groups, 'groups', UPGRADES.length);

test("rollback mid-upgrade: after a newer version's expand upgrade is interrupted, this version's built program (the previous release's dist/) serves and its `cag upgrade` exits 0; rolled forward, nothing is left in the older shape; a contract interrupted after it leaves that program refusing", async () => {
  const name = uniqueName('upgrades-rollback');
  const target = client.db(name);
  const processes: ServiceProcess[] = [];
  const groupsOfOldShape = () => target.collection(COLLECTIONS.groups).countDocuments({ later: { $exists: false } });
  /** The previous release as its image runs it: dist/src/main.js, on this database. */
  const previousRelease = async (role: 'all' | 'api') => {
    const port = await freePort();
    const p = spawnService(
      {
        MONGO_URL,
        MONGO_DB: name,
        PORT: String(port),
        SERVICE_ROLE: role,
        KAFKA_BROKERS,
        KAFKA_GROUP_ID: uniqueName('g'),
        KAFKA_TOPICS: uniqueName('rollback'),
        CHANGES_TOPIC: '',
      },
      { built: true },
    );
    processes.push(p);
    const url = `http://127.0.0.1:${port}`;
    const up = await waitFor(
      () =>
        http(url)
          .get('/readyz')
          .catch(() => ({ status: 0, body: {} }) as never),
      (r) => r.status === 200,
      60000,
    );
    expect({ status: up.status, output: up.status === 200 ? '' : p.output() }).toEqual({ status: 200, output: '' });
    return url;
  };
  const builtCag = () =>
    new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [builtProgram('src/cli/main.js'), 'upgrade'],
        { env: { PATH: process.env.PATH, MONGO_URL, MONGO_DB: name, LOG_LEVEL: 'silent' } },
        (err, _stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stderr }),
      );
    });
  try {
    await ensureIndexes(target);
    const token = await siteAdminToken('org-a');
    const previous = await previousRelease('all');
    for (let i = 0; i < 6; i++) expect((await http(previous, token).post('course-access-groups/', { name: `before ${i}`, description: '' })).status).toBe(201);

    // The newer version's upgrade stops after its first batch (its pod rolled back, its Job killed).
    const stop = new AbortController();
    await expect(
      upgradeStoredRecords(target, {
        upgrades: [...UPGRADES, LATER_EXPAND],
        batchSize: 2,
        signal: stop.signal,
        afterBatch: async (u) => {
          if (u === LATER_EXPAND) stop.abort();
        },
      }),
    ).rejects.toThrow();
    expect(await groupsOfOldShape()).toBe(4);
    expect(await storedShape(target)).toEqual({ shape: NEWER, floor: UPGRADES.length });

    // The previous release goes on: past two of its shape checks (every 5 s), ready, writing, and a new pod of it starts.
    await new Promise((r) => setTimeout(r, 2 * SHAPE_CHECK_MS + 1000));
    expect((await http(previous).get('/readyz')).body).toEqual({ status: 'ready' });
    expect((await http(previous, token).post('course-access-groups/', { name: 'during the rollback', description: '' })).status).toBe(201);
    const restarted = await previousRelease('api');
    const list = await http(restarted, token).get('course-access-groups/');
    expect({ status: list.status, count: list.body.count }).toEqual({ status: 200, count: 7 });
    // Its Job (recreated by the rollback) has nothing to do, and says why: no failure to retry.
    expect(await builtCag()).toEqual({
      code: 0,
      stderr: `stored data is of shape ${NEWER}, newer than this version knows (${UPGRADES.length}), and this version still serves it (floor ${UPGRADES.length}); nothing to upgrade\n`,
    });

    // Rolled forward: the interrupted pass resumes, and a whole pass takes what the rollback wrote.
    await upgradeStoredRecords(target, { upgrades: [...UPGRADES, LATER_EXPAND], batchSize: 2 });
    expect(await groupsOfOldShape()).toBe(0);
    expect((await http(previous).get('/readyz')).body).toEqual({ status: 'ready' });

    // A contract after it (one more version) stops the previous release from its first pass on.
    const contract = new AbortController();
    await expect(
      upgradeStoredRecords(target, {
        upgrades: [...UPGRADES, LATER_EXPAND, LATER],
        settleMs: 2 * SHAPE_CHECK_MS,
        signal: contract.signal,
        afterBatch: async (u) => {
          if (u === LATER) contract.abort();
        },
      }),
    ).rejects.toThrow();
    const refused = await waitFor(
      () => http(previous).get('/readyz'),
      (r) => r.status === 503,
      3 * SHAPE_CHECK_MS,
    );
    expect(refused.body.failing).toContain(
      `stored data is of shape ${NEWER + 1}, newer than this version knows (${UPGRADES.length}): a newer version has upgraded it`,
    );
    expect((await http(previous, token).post('course-access-groups/', { name: 'after the contract', description: '' })).status).toBe(503);
    expect((await builtCag()).code).toBe(4);
  } finally {
    killAll(processes);
    await target.dropDatabase();
  }
}, 180000);

test('a contract resumed by another holder (the first one stopped after raising the floor) still waits for older processes before its confirming pass: what one writes within the window is upgraded', async () => {
  const name = uniqueName('upgrades-resumed-settle');
  const target = client.db(name);
  const SETTLE = 3000;
  try {
    await ensureIndexes(target);
    await upgradeStoredRecords(target); // this version's shape: older processes of it watch the floor
    const users = target.collection(COLLECTIONS.users);
    await insertOldShapeUsers(target, 6, 1, 'current');
    // The newer version's first holder raises the floor, then stops after one batch (SIGTERM: its lease released).
    const stop = new AbortController();
    const raised = Date.now();
    await expect(
      upgradeStoredRecords(target, {
        upgrades: [...UPGRADES, LATER],
        settleMs: SETTLE,
        batchSize: 2,
        signal: stop.signal,
        afterBatch: async (u) => {
          if (u === LATER) stop.abort();
        },
      }),
    ).rejects.toThrow();
    // An older process that has not noticed the floor yet (it has SETTLE) writes a learner of its shape late in that window.
    const older = new Promise<void>((resolve, reject) =>
      setTimeout(() => users.insertOne({ _id: 'written-by-an-older-process' } as never).then(() => resolve(), reject), SETTLE - 500),
    );
    // Another pod of the newer version takes the lease at once and resumes.
    await upgradeStoredRecords(target, { upgrades: [...UPGRADES, LATER], settleMs: SETTLE, batchSize: 2 });
    await older;
    expect({ waited: Date.now() - raised >= SETTLE, left: await users.countDocuments({ later: { $exists: false } }) }).toEqual({ waited: true, left: 0 });
  } finally {
    await target.dropDatabase();
  }
}, 60000);
