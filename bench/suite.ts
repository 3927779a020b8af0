import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { Kafka, logLevel } from 'kafkajs';
import { MongoClient } from 'mongodb';
import { API_PREFIX as API } from '../src/http/openapi';
import { benchEvents, type EventFigures } from './events';
import { probeRate, waitUntilIdle } from './idle';
import { drive, type LoadOptions, type Target } from './load';
import { type BenchScale, MAIN_ORG, otherUsersOf, type Seeded, seedBenchData, WORDS } from './seed';
import type { ServerMessage, ServerRequest } from './server';
import { type BenchRow, formatTable } from './table';

export interface SuiteOptions extends BenchScale, LoadOptions {
  mongoUrl: string;
  kafkaBrokers: string;
  /** The schema registry (Confluent-compatible API) of the Avro events row. */
  schemaRegistryUrl: string;
  /** Activation events for the events rows (bench/events.ts). */
  events: number;
  /** Seconds of unrecorded load before each row (JIT, connection pools, caches). */
  warmup: number;
  /** Also measure the access rows with the cache off (a second service process). */
  compareWithoutCache: boolean;
  /** `all`, or `lists`: the ceiling and the list rows only (issue 12), for a quick run at full scale. */
  rows?: 'all' | 'lists';
  /**
   * Before each row: how long one idle probe reads (ms), and how long to wait at most for the
   * stack to be idle (bench/idle.ts). Defaults 1,000 and 60,000; the smoke test of the suite,
   * which runs beside other tests and asserts no rate, waits for no idleness.
   */
  idle?: { probeMs: number; waitMs: number };
  logLevel: string;
  progress?: (line: string) => void;
}

export interface SuiteResult {
  rows: BenchRow[];
  peakRssMiB: number;
  table: string;
  /** The targets of the bench, each with what this run measured (never asserted). */
  targets: string[];
}

const JWT_SECRET = `bench-${randomBytes(12).toString('hex')}`;

export const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('2h').sign(new TextEncoder().encode(JWT_SECRET));

export interface HeapReport {
  heapUsed: number;
  heapTotal: number;
  external: number;
  rss: number;
}

export interface ServiceProcess {
  serviceUrl: string;
  ceilingUrl: string;
  peakRss: () => number;
  /** The latest resident-memory sample (bytes), taken every 100 ms. */
  rss: () => number;
  /**
   * Collects garbage in the service and reports its memory (bytes): the live heap, what V8 holds
   * for its heap, memory outside it (buffers), and RSS; writes a heap snapshot to `snapshot` if given.
   */
  heap: (snapshot?: string) => Promise<HeapReport>;
  /** Resolves once no request is being handled (abandoned ones included). */
  idle: () => Promise<void>;
  stop: () => Promise<void>;
}

/**
 * Starts bench/server.ts as a child process (its own event loop, as in production) and waits for
 * its ports. With `topic`, the process also consumes it (SERVICE_ROLE all), as a one-process
 * deployment does.
 */
export async function startServiceProcess(
  opts: Pick<SuiteOptions, 'mongoUrl' | 'logLevel'> & { kafkaBrokers?: string },
  dbName: string,
  cache: 'on' | 'off',
  topic?: string,
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  const child: ChildProcess = fork(join(__dirname, 'server.ts'), [], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    // The access log is written (production cost) but to nowhere: a pipe back to us would add load.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: {
      ...process.env,
      PORT: '0',
      MONGO_URL: opts.mongoUrl,
      MONGO_DB: dbName,
      JWT_SECRET,
      JWT_PUBLIC_KEY: '',
      JWT_JWKS_URL: '',
      SERVICE_ROLE: topic ? 'all' : 'api',
      KAFKA_BROKERS: opts.kafkaBrokers ?? process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
      ...(topic ? { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: `bench-${dbName}` } : {}),
      LOG_LEVEL: opts.logLevel,
      ACCESS_CACHE: cache,
      // Change events and the audit trail as deployed (on) unless a row says otherwise.
      CHANGES_TOPIC: `bench-changes-${dbName}`,
      ...env,
    },
  });
  let peak = 0;
  let latest = 0;
  let inFlight = 0;
  const ready = new Promise<{ servicePort: number; ceilingPort: number }>((resolve, reject) => {
    child.on('message', (m: ServerMessage) => {
      if (m.type === 'sample') {
        peak = Math.max(peak, m.rss);
        latest = m.rss;
        inFlight = m.inFlight;
      } else if (m.type === 'ready') resolve(m);
    });
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code} before it was ready`)));
  });
  const ports = await ready;
  return {
    serviceUrl: `http://127.0.0.1:${ports.servicePort}`,
    ceilingUrl: `http://127.0.0.1:${ports.ceilingPort}`,
    peakRss: () => peak,
    rss: () => latest,
    heap: (snapshot) =>
      new Promise((resolve) => {
        const onHeap = (m: ServerMessage) => {
          if (m.type !== 'heap') return;
          child.off('message', onHeap);
          resolve({ heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, rss: m.rss });
        };
        child.on('message', onHeap);
        child.send({ type: 'heap', snapshot } satisfies ServerRequest);
      }),
    idle: async () => {
      const deadline = Date.now() + 120_000;
      // Two samples in a row at zero: one may predate the last abandoned request's start.
      for (let zeros = 0; zeros < 2 && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 150));
        zeros = inFlight === 0 ? zeros + 1 : 0;
      }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.send({ type: 'stop' } satisfies ServerRequest);
      }),
  };
}

/**
 * `npm run bench`: seeds a fresh database, starts the service as a child process, drives every
 * row with the same connections and duration, and returns the table. Drops the database after.
 */
export async function runBenchSuite(opts: SuiteOptions): Promise<SuiteResult> {
  const say = opts.progress ?? (() => undefined);
  const dbName = `bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const client = new MongoClient(opts.mongoUrl);
  const processes: ServiceProcess[] = [];
  try {
    const started = Date.now();
    const db = client.db(dbName);
    const data = await seedBenchData(db, opts);
    const otherUsers = otherUsersOf(opts);
    say(
      `seeded ${opts.users} + ${otherUsers} users (${opts.otherGrams === false ? 'no search grams for the second organization' : 'all with search grams'}), ${opts.courses} courses, ${opts.groups} groups in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    // Every row starts on an idle stack: this rate, measured now, is what idle means.
    const idle = opts.idle ?? { probeMs: 1000, waitMs: 60_000 };
    const idleRate = await probeRate(db, data.userIds, 2 * idle.probeMs);
    say(`idle probe: ${idleRate.toFixed(0)} reads/s`);
    const idleNote = async () => {
      const share = await waitUntilIdle(db, data.userIds, idleRate, 0.7, idle.waitMs, idle.probeMs);
      return share < 0.7 ? `stack busy at the start: probe at ${share.toFixed(2)} of its idle rate, so the ratio flatters` : undefined;
    };

    const lms = { authorization: `Bearer ${await sign({ user_id: 900_000_001, roles: ['service'] })}` };
    const admin = { authorization: `Bearer ${await sign({ user_id: 1, org: MAIN_ORG, roles: ['site_admin'] })}` };
    const rows: BenchRow[] = [];
    let current: ServiceProcess | null = null;
    /** `prime` runs first, unmeasured: what a row assumes is already warm (e.g. cached users). */
    const run = async (target: Target, ceilingRate: number | null, note?: string, prime?: () => Promise<void>, during?: () => () => Promise<void>) => {
      if (prime) {
        await prime();
        await current?.idle();
      }
      if (opts.warmup > 0) {
        await drive(target, { ...opts, duration: opts.warmup }, ceilingRate);
        await current?.idle();
      }
      const busy = await idleNote();
      const stopDuring = during?.();
      const row = await drive(target, opts, ceilingRate);
      await stopDuring?.();
      await current?.idle();
      const notes = [note, busy].filter(Boolean);
      if (notes.length > 0) row.note = notes.join('; ');
      rows.push(row);
      say(formatTable([row]).split('\n')[2]!);
      return row;
    };

    const updatesTopic = `bench-updates-${dbName}`;
    const cached = await startServiceProcess(opts, dbName, 'on', updatesTopic);
    processes.push(cached);
    current = cached;
    const ceiling = await run(
      { row: 'ceiling', baseUrl: cached.ceilingUrl, request: () => ({ path: `/${any(data.userIds)}` }) },
      null,
      `bare Koa route, one findOne by _id among ${opts.users + otherUsers} users`,
    );
    const accessRows = async (service: ServiceProcess, suffix: string) => {
      const single = await run(accessSingle(service.serviceUrl, lms, data, `access single${suffix}`), ceiling.rate);
      const batch = await run(accessBatch(service.serviceUrl, lms, data, `access batch 100${suffix}`), ceiling.rate);
      // A learner browses: the same few users ask again and again. Shows what a cache hit costs.
      // Spread over the table, so they are not all in the first pages of the index.
      const step = Math.max(1, Math.floor(data.userIds.length / 100));
      const hot = { ...data, userIds: data.userIds.filter((_, i) => i % step === 0).slice(0, 100) };
      // A row about cache hits starts warm: every course once (one batch), then each returning user once.
      const prime = async () => {
        const ask = (path: string, init: RequestInit = {}) =>
          fetch(`${service.serviceUrl}${API}/${path}`, {
            ...init,
            headers: { ...lms, 'content-type': 'application/json' },
            signal: AbortSignal.timeout(120_000),
          });
        await ask('access/batch/', {
          method: 'POST',
          body: JSON.stringify({ action: 'course.enroll', user_id: hot.userIds[0], course_ids: data.courseKeys.slice(0, 1000) }),
        });
        const queue = [...hot.userIds];
        const worker = async () => {
          for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
            await ask(`access/?course_id=${encodeURIComponent(data.courseKeys[0]!)}&action=course.enroll&user_id=${id}`);
          }
        };
        await Promise.all(Array.from({ length: opts.connections }, worker));
      };
      const returning = await run(accessSingle(service.serviceUrl, lms, hot, `access single, 100 returning users${suffix}`), ceiling.rate, undefined, prime);
      return { single, batch, hot, prime, returning };
    };
    const all = opts.rows !== 'lists';
    const access = all ? await accessRows(cached, '') : null;
    let underEvents: BenchRow | null = null;
    let eventFigures: EventFigures | null = null;
    if (access) {
      // The same returning users while the LMS updates 50 other users a second: the change log
      // drops only those users from the cache, so the hit rate should hold.
      const stream = userUpdates(
        opts.kafkaBrokers,
        updatesTopic,
        data.userIds.filter((id) => !access.hot.userIds.includes(id)),
        50,
      );
      await stream.ready;
      underEvents = await run(
        accessSingle(cached.serviceUrl, lms, access.hot, 'access single, 100 returning users, 50 user events/s'),
        ceiling.rate,
        undefined,
        access.prime,
        () => stream.start(),
      );
      underEvents.note = [underEvents.note, `${stream.sent()} user.updated events sent during the row`].filter(Boolean).join('; ');
      await stream.close();
    }
    // Issue 12: the lists of a large organization, every one index-served.
    const list = (row: string, path: () => string) =>
      run({ row, baseUrl: cached.serviceUrl, headers: admin, request: () => ({ path: `${API}/${path()}` }) }, ceiling.rate);
    await list('users search', () => `users/?search=${threeLetters()}&limit=20`);
    await list('users search, 2 terms', () => `users/?search=${any(WORDS)}%20${100 + Math.floor(Math.random() * 900)}&limit=20`);
    await list('users by group', () => `users/?group=${any(data.groupIds)}`);
    await list('users without group', () => 'users/?no_group=true');
    await list('users by email', () => `users/?email_exact=${encodeURIComponent(any(data.emails).toUpperCase())}`);
    await list('users deep page', () => `users/?offset=${Math.max(0, data.userIds.length - 1000)}&limit=20`);
    await list('courses by group', () => `courses/?group=${any(data.groupIds)}`);
    await list('courses search, private', () => `courses/?search=${any(WORDS)}&is_public=false`);
    // The rows below run their own processes: the HTTP service stops first (handing back the
    // change relay's lease), and each row starts once the stack is idle again.
    await cached.stop();
    let writes: { on: BenchRow; off: BenchRow } | null = null;
    if (all) {
      // Admin writes (issue 14): membership moves with change events and the audit trail on (as
      // deployed), against the same writes with both off, each on a fresh service process.
      const adminWriteRow = async (row: string, env: Record<string, string>, ceilingRate: number | null) => {
        const service = await startServiceProcess(opts, dbName, 'on', undefined, env);
        processes.push(service);
        current = service;
        try {
          return await run(membershipMoves(service.serviceUrl, admin, data, row), ceilingRate);
        } finally {
          await service.stop();
        }
      };
      const off = await adminWriteRow('admin writes: events and audit off (ceiling)', { CHANGES_TOPIC: '', AUDIT_LOG: 'off' }, null);
      writes = { off, on: await adminWriteRow('admin writes: events and audit on', { AUDIT_LOG: 'on' }, off.rate) };
      opts.progress?.(`events: ${opts.events} activations`);
      const eventsBusy = await idleNote();
      const { rows: eventRows, figures } = await benchEvents({
        events: opts.events,
        burst: Math.min(10_000, opts.events),
        mongoUrl: opts.mongoUrl,
        kafkaBrokers: opts.kafkaBrokers,
        schemaRegistryUrl: opts.schemaRegistryUrl,
      });
      eventFigures = figures;
      if (eventsBusy) for (const row of eventRows) row.note = [row.note, eventsBusy].filter(Boolean).join('; ');
      rows.push(...eventRows);
    }

    if (all && opts.compareWithoutCache) {
      const uncached = await startServiceProcess(opts, dbName, 'off');
      processes.push(uncached);
      current = uncached;
      await accessRows(uncached, ' (cache off)');
    }
    await Promise.all(processes.map((p) => p.stop()));

    const peakRssMiB = Math.max(...processes.map((p) => p.peakRss())) / 2 ** 20;
    const byName = (name: string) => rows.find((r) => r.row === name);
    const fmt = (n: number | undefined | null, d = 2) => (n === undefined || n === null ? 'n/a' : n.toFixed(d));
    const events = rows.find((r) => r.row.startsWith('events: activation'));
    const avroEvents = rows.find((r) => r.row.startsWith('events: the same in Avro'));
    const p99 = (name: string) => {
      const row = byName(name);
      return !row ? 'not run' : row.failed ? 'FAILED row' : `${fmt(row.p99, 1)} ms`;
    };
    const listRows: [string, number][] = [
      ['users search', 50],
      ['users search, 2 terms', 50],
      ['users by group', 20],
      ['users without group', 20],
      ['users by email', 20],
      ['courses by group', 20],
      ['courses search, private', 20],
      ['users deep page', 100],
    ];
    const slowest = listRows
      .map(([name]) => byName(name))
      .filter((r): r is BenchRow => r !== undefined)
      .sort((a, b) => a.rate - b.rate)[0];
    const targets = [
      `ceiling ≥ 1,000 requests/s: ${ceiling.rate.toFixed(0)}/s`,
      ...(access && underEvents
        ? [
            `access single ≥ 0.8 × ceiling: ${fmt(access.single.rate / ceiling.rate)} × ceiling`,
            `access batch 100 p99 ≤ 3 × access single p99: ${fmt((access.batch.p99 ?? NaN) / (access.single.p99 ?? NaN))} ×`,
            `cache hits while 50 user events/s flow ≥ 3,000 requests/s: ${underEvents.rate.toFixed(0)}/s`,
          ]
        : []),
      ...listRows.map(([name, ms]) => `${name} p99 < ${ms} ms: ${p99(name)}`),
      `every list row ≥ 0.3 × ceiling: slowest ${slowest ? `${slowest.row}, ${fmt(slowest.rate / ceiling.rate)} × ceiling` : 'not run'}`,
      ...(all
        ? [
            `events ≥ 0.5 × their ceiling: ${fmt(events?.ceilingRate ? events.rate / events.ceilingRate : undefined)} × ceiling`,
            `Avro events ≥ 0.9 × the JSON events row: ${fmt(avroEvents?.ceilingRate ? avroEvents.rate / avroEvents.ceilingRate : undefined)} ×`,
            `a burst of ${opts.events} activations (3 partitions, 20% matching a rule) applied in < 3 min: ${fmt(eventFigures?.burstSeconds, 0)} s`,
            `lag back to zero ≤ 10 s after a burst of ${Math.min(10_000, opts.events)}, 50 decisions/s answered: ${fmt(eventFigures?.lagSeconds, 1)} s`,
            `decision p99 < 25 ms during that burst: ${fmt(eventFigures?.decisionP99, 1)} ms`,
            `database commands per event < 2 (the batch path): ${fmt(eventFigures?.commandsPerEvent, 3)}`,
          ]
        : []),
      ...(writes
        ? [
            `admin writes with change events and audit ≥ 0.7 × without: ${writes.on.failed || writes.off.failed ? 'FAILED row' : `${fmt(writes.on.rate / writes.off.rate)} ×`}`,
          ]
        : []),
      `service peak RSS < 300 MiB: ${peakRssMiB.toFixed(0)} MiB`,
    ];
    return { rows, peakRssMiB, table: formatTable(rows), targets };
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    await client
      .db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await client.close();
  }
}

/**
 * `user.updated` events for `userIds`, `perSecond` of them, to `topic` (which the service
 * consumes), each newer than the last: a steady LMS stream that changes real users.
 */
function userUpdates(brokers: string, topic: string, userIds: readonly number[], perSecond: number) {
  const kafka = new Kafka({ clientId: 'bench-updates', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  const ready = producer.connect();
  return {
    ready,
    sent: () => sent,
    /** Starts the stream; the function returned stops it. */
    start() {
      const tick = 100;
      timer = setInterval(() => {
        const messages = Array.from({ length: Math.round((perSecond * tick) / 1000) }, () => {
          const id = any(userIds);
          sent++;
          const event = {
            specversion: '1.0',
            id: randomBytes(8).toString('hex'),
            source: 'bench',
            type: 'org.openedx.learning.user.updated.v1',
            time: new Date(Date.now()).toISOString(),
            data: { user: { id, is_active: true, pii: { username: `u${id}`, email: `u${id}@example.com`, name: `Updated ${sent}` } }, organization: MAIN_ORG },
          };
          return { key: String(id), value: JSON.stringify(event) };
        });
        void producer.send({ topic, messages }).catch(() => undefined);
      }, tick);
      return async () => clearInterval(timer);
    },
    close: async () => {
      clearInterval(timer);
      await producer.disconnect();
    },
  };
}

const any = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;
const threeLetters = () => Array.from({ length: 3 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('');

function accessSingle(baseUrl: string, headers: Record<string, string>, data: Seeded, row: string): Target {
  return {
    row,
    baseUrl,
    headers,
    request: () => ({
      path: `${API}/access/?course_id=${encodeURIComponent(any(data.courseKeys))}&action=course.enroll&user_id=${any(data.userIds)}`,
    }),
  };
}

/** PATCH memberships/<id>/: a seeded membership (its id is its user's) moved to a random group. */
function membershipMoves(baseUrl: string, headers: Record<string, string>, data: Seeded, row: string): Target {
  return {
    row,
    baseUrl,
    method: 'PATCH',
    headers,
    request: () => ({ path: `${API}/memberships/${any(data.userIds)}/`, body: JSON.stringify({ group: any(data.groupIds) }) }),
  };
}

function accessBatch(baseUrl: string, headers: Record<string, string>, data: Seeded, row: string): Target {
  return {
    row,
    baseUrl,
    method: 'POST',
    headers,
    request: () => ({
      path: `${API}/access/batch/`,
      body: JSON.stringify({
        action: 'course.see_in_catalog',
        user_id: any(data.userIds),
        course_ids: Array.from({ length: 100 }, () => any(data.courseKeys)),
      }),
    }),
  };
}
