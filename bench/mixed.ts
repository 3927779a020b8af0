/**
 * Mixed load (issue 6): lists, searches, writes and access decisions at once, against the service
 * in a child process (bench/server.ts) on a fresh, small seeded database. Reports counts by
 * status class, socket errors, latency and resident memory after the first 10 s and at the end
 * (a leak shows as growth between the two). Measures; asserts nothing.
 */

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { MongoClient } from 'mongodb';
import { API_PREFIX as API } from '../src/http/openapi';
import { type BenchScale, MAIN_ORG, random, seedBenchData } from './seed';
import { type HeapReport, sign, startServiceProcess } from './suite';

export interface MixedOptions extends BenchScale {
  mongoUrl: string;
  /** Seconds of load. */
  duration: number;
  connections: number;
  /** Seconds before autocannon counts a request as a timeout (a socket error). */
  timeout: number;
  logLevel: string;
  /** A folder for heap snapshots of the service, early and at the end (bench/heap-diff.ts compares them). */
  heapSnapshots?: string;
  progress?: (line: string) => void;
}

export interface MixedReport {
  users: number;
  courses: number;
  groups: number;
  duration: number;
  connections: number;
  requests: number;
  byKind: Record<string, number>;
  '2xx': number;
  '4xx': number;
  '5xx': number;
  /** Answers by status code. */
  statusCodes: Record<string, number>;
  /** Connection errors and timeouts (autocannon's `errors`, which include its `timeouts`). */
  socketErrors: number;
  timeouts: number;
  p50: number;
  p99: number;
  /** Resident memory of the service (MiB) 10 s into the load (or at its middle for a shorter run), and at its end. */
  rssEarlyMiB: number;
  rssEndMiB: number;
  /** The service's live heap (MiB, after a full collection) at the same two moments. */
  heapEarlyMiB: number;
  heapEndMiB: number;
  /** What V8 holds for its heap, and the memory outside it (buffers), at the same two moments (MiB). */
  heapTotalEarlyMiB: number;
  heapTotalEndMiB: number;
  externalEarlyMiB: number;
  externalEndMiB: number;
}

const WORDS = ['amber', 'birch', 'cedar', 'delta', 'ember', 'fjord', 'gamma', 'heron'];

/** The traffic mix, in percent: what an admin dashboard and an LMS do together. */
const MIX: [kind: string, percent: number][] = [
  ['list', 25],
  ['search', 20],
  ['write', 15],
  ['access', 30],
  ['access batch', 10],
];

export async function runMixedLoad(opts: MixedOptions): Promise<MixedReport> {
  const say = opts.progress ?? (() => undefined);
  const dbName = `load_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const client = new MongoClient(opts.mongoUrl);
  let service: Awaited<ReturnType<typeof startServiceProcess>> | null = null;
  try {
    const data = await seedBenchData(client.db(dbName), opts);
    say(`seeded ${opts.users} users, ${opts.courses} courses, ${opts.groups} groups in ${dbName}`);
    service = await startServiceProcess(opts, dbName, 'on');
    const admin = `Bearer ${await sign({ user_id: 1, org: MAIN_ORG, roles: ['site_admin'] })}`;
    const lms = `Bearer ${await sign({ user_id: 900_000_001, roles: ['service'] })}`;
    const next = random(7);
    const any = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
    const byKind: Record<string, number> = {};
    let serial = 0;

    const pickKind = () => {
      let roll = next() * 100;
      for (const [kind, percent] of MIX) {
        roll -= percent;
        if (roll < 0) return kind;
      }
      return MIX[0]![0];
    };
    /** One request of a random kind; writes create, rename and add rules (each valid: 2xx expected). */
    const request = (): { method: 'GET' | 'POST' | 'PATCH'; path: string; body?: string; headers: Record<string, string> } => {
      const kind = pickKind();
      byKind[kind] = (byKind[kind] ?? 0) + 1;
      const json = { 'content-type': 'application/json' };
      switch (kind) {
        case 'list': {
          const list = any([
            'course-access-groups/',
            'users/?limit=50',
            'courses/?limit=50',
            'memberships/',
            'group-courses/',
            `courses/?group=${any(data.groupIds)}`,
          ]);
          return { method: 'GET', path: `${API}/${list}`, headers: { authorization: admin } };
        }
        case 'search': {
          const resource = any(['users', 'courses']);
          return { method: 'GET', path: `${API}/${resource}/?search=${any(WORDS)}&limit=20`, headers: { authorization: admin } };
        }
        case 'write': {
          const n = ++serial;
          const write = n % 3;
          if (write === 0)
            return {
              method: 'POST',
              path: `${API}/course-access-groups/`,
              body: JSON.stringify({ name: `load ${n}`, description: 'made under load' }),
              headers: { authorization: admin, ...json },
            };
          if (write === 1)
            return {
              method: 'PATCH',
              path: `${API}/course-access-groups/${any(data.groupIds)}/`,
              body: JSON.stringify({ description: `renamed ${n}` }),
              headers: { authorization: admin, ...json },
            };
          const group = any(data.groupIds);
          return {
            method: 'POST',
            path: `${API}/membership-rules/`,
            body: JSON.stringify({ name: `rule ${n}`, domain: `d${n}-${dbName.slice(-6)}.example.org`, group }),
            headers: { authorization: admin, ...json },
          };
        }
        case 'access':
          return {
            method: 'GET',
            path: `${API}/access/?course_id=${encodeURIComponent(any(data.courseKeys))}&action=course.enroll&user_id=${any(data.userIds)}`,
            headers: { authorization: lms },
          };
        default:
          return {
            method: 'POST',
            path: `${API}/access/batch/`,
            body: JSON.stringify({
              action: 'course.see_in_catalog',
              user_id: any(data.userIds),
              course_ids: Array.from({ length: 20 }, () => any(data.courseKeys)),
            }),
            headers: { authorization: lms, ...json },
          };
      }
    };

    // RSS 10 s in, or at the middle of a run shorter than 20 s (the smoke run).
    const earlyAt = Math.min(10, opts.duration / 2) * 1000;
    let rssEarly = 0;
    let heapEarly: Promise<HeapReport> = Promise.resolve({ heapUsed: 0, heapTotal: 0, external: 0, rss: 0 });
    const snapshot = (name: string) => (opts.heapSnapshots ? join(opts.heapSnapshots, `${name}.heapsnapshot`) : undefined);
    const early = setTimeout(() => {
      rssEarly = service!.rss();
      heapEarly = service!.heap(snapshot('early'));
    }, earlyAt);
    say(`${opts.duration} s of mixed load at ${opts.connections} connections`);
    const result = await autocannon({
      url: service.serviceUrl,
      connections: opts.connections,
      duration: opts.duration,
      timeout: opts.timeout,
      requests: [{ setupRequest: (req) => ({ ...req, ...request() }) }],
    });
    clearTimeout(early);
    const rssEnd = service.rss();
    const heapEnd = await service.heap(snapshot('end'));
    const heapStart = await heapEarly;
    await service.idle();
    const statuses = result.statusCodeStats ?? {};
    const inClass = (c: number) => Object.entries(statuses).reduce((sum, [code, s]) => sum + (Math.floor(Number(code) / 100) === c ? (s.count ?? 0) : 0), 0);
    return {
      users: opts.users,
      courses: opts.courses,
      groups: opts.groups,
      duration: opts.duration,
      connections: opts.connections,
      requests: result['2xx'] + result.non2xx,
      byKind,
      '2xx': inClass(2),
      '4xx': inClass(4),
      '5xx': inClass(5),
      statusCodes: Object.fromEntries(Object.entries(statuses).map(([code, s]) => [code, s.count ?? 0])),
      socketErrors: result.errors,
      timeouts: result.timeouts,
      p50: result.latency.p50,
      p99: result.latency.p99,
      rssEarlyMiB: rssEarly / 2 ** 20,
      rssEndMiB: rssEnd / 2 ** 20,
      heapEarlyMiB: heapStart.heapUsed / 2 ** 20,
      heapEndMiB: heapEnd.heapUsed / 2 ** 20,
      heapTotalEarlyMiB: heapStart.heapTotal / 2 ** 20,
      heapTotalEndMiB: heapEnd.heapTotal / 2 ** 20,
      externalEarlyMiB: heapStart.external / 2 ** 20,
      externalEndMiB: heapEnd.external / 2 ** 20,
    };
  } finally {
    await service?.stop();
    await client
      .db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await client.close();
  }
}

export function formatMixedReport(r: MixedReport): string {
  const growth = r.rssEarlyMiB > 0 ? ((r.rssEndMiB - r.rssEarlyMiB) / r.rssEarlyMiB) * 100 : NaN;
  return [
    `data set: ${r.users} users, ${r.courses} courses, ${r.groups} groups; ${r.duration} s at ${r.connections} connections`,
    `requests: ${r.requests} (${Object.entries(r.byKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')} sent)`,
    `2xx: ${r['2xx']}, 4xx: ${r['4xx']}, 5xx: ${r['5xx']} (by status: ${JSON.stringify(r.statusCodes)}), socket errors: ${r.socketErrors} (timeouts ${r.timeouts})`,
    `latency: p50 ${r.p50} ms, p99 ${r.p99} ms`,
    `RSS: ${r.rssEarlyMiB.toFixed(0)} MiB early, ${r.rssEndMiB.toFixed(0)} MiB at the end (${growth >= 0 ? '+' : ''}${growth.toFixed(1)}%; within 10% = no leak)`,
    `after a full collection, early and at the end: live heap ${r.heapEarlyMiB.toFixed(1)} and ${r.heapEndMiB.toFixed(1)} MiB; V8 heap held ${r.heapTotalEarlyMiB.toFixed(1)} and ${r.heapTotalEndMiB.toFixed(1)} MiB; outside the heap (buffers) ${r.externalEarlyMiB.toFixed(1)} and ${r.externalEndMiB.toFixed(1)} MiB`,
  ].join('\n');
}
