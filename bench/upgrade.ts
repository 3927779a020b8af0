/**
 * `npm run bench:upgrade -- --users N`: the stored-data upgrade (src/db/upgrades.ts) of a database
 * of N users stored by an earlier version (no history, no upgrade mark: what a
 * deployment upgraded from before the learners' histories has), run by three processes of the built
 * service (`dist/`, `npm run build` first) started together, as a rollout starts its pods.
 * Reports which process took the lease, the scan's duration and rate, its progress lines, what
 * the others' /readyz said meanwhile, that all three end ready, and the upgrading process's peak
 * RSS (VmHWM). Asserts nothing; the figures are quoted in docs/operations.md.
 *
 * Environment: MONGO_URL, KAFKA_BROKERS (the local stack's; one process of the three consumes),
 * BENCH_UPGRADE_PORTS (three HTTP ports, default 8251,8252,8253). The database is dropped at the
 * end unless --keep. SIGINT or SIGTERM stops it early with what was measured so far (a scan too
 * long to wait for).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes } from '../src/db/collections';
import { oldShapeUser, random, WORDS } from './seed';

const ROOT = join(__dirname, '..');

const { values } = parseArgs({
  options: { users: { type: 'string', default: '100000' }, keep: { type: 'boolean', default: false } },
});
const USERS = Number(values.users);
if (!Number.isInteger(USERS) || USERS < 1) {
  process.stderr.write(`--users must be a positive integer, got "${values.users}"\n`);
  process.exit(2);
}
const MONGO_URL = process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/';
const KAFKA_BROKERS = process.env.KAFKA_BROKERS || '127.0.0.1:9092';
const PORTS = (process.env.BENCH_UPGRADE_PORTS || '8251,8252,8253').split(',').map(Number);
const ROLES = ['all', 'api', 'api'] as const;

const started = Date.now();
const say = (line: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s] ${line}\n`);
const count = (n: number) => n.toLocaleString('en-US');

/** Users as a version before the history stored them: its earlier bookkeeping (`act_v`, `act_done`), no `h`. */
async function seedOldShapeUsers(db: Db, n: number): Promise<void> {
  const next = random(42);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const users = db.collection(COLLECTIONS.users);
  const BATCH = 10_000;
  let lastSaid = Date.now();
  for (let from = 1; from <= n; from += BATCH) {
    const docs = [];
    for (let id = from; id < Math.min(from + BATCH, n + 1); id++) {
      const first = pick(WORDS);
      const last = pick(WORDS);
      const email = `${first}.${last}${id}@${pick(WORDS)}.example.com`;
      const active = next() > 0.02;
      docs.push(oldShapeUser(id, { username: `${first}${id}`, name: `${first} ${last}`, email, active }));
    }
    await users.insertMany(docs as never, { ordered: false });
    if (Date.now() - lastSaid > 10_000) {
      lastSaid = Date.now();
      say(`seeded ${count(Math.min(from + BATCH - 1, n))} of ${count(n)} users`);
    }
  }
}

interface Proc {
  n: number;
  role: string;
  port: number;
  child: ChildProcess;
  logs: { time: number; msg: string; raw: Record<string, unknown> }[];
  /** Each distinct /readyz answer, with when it was first seen. */
  readiness: { at: number; status: number; detail: string }[];
  /** The last /readyz answer. */
  latest?: { at: number; status: number; detail: string };
  readyAt: number | null;
  peakRssKb: number;
  exit?: number | null;
}

function startProcess(n: number, dbName: string): Proc {
  const role = ROLES[n]!;
  const port = PORTS[n]!;
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      MONGO_URL,
      MONGO_DB: dbName,
      KAFKA_BROKERS,
      KAFKA_GROUP_ID: `${dbName}-consumers`,
      KAFKA_TOPICS: `${dbName}-activated`,
      CHANGES_TOPIC: '',
      JWT_SECRET: 'bench-upgrade-secret-bench-upgrade-secret',
      SERVICE_ROLE: role,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const proc: Proc = { n, role, port, child, logs: [], readiness: [], readyAt: null, peakRssKb: 0 };
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      try {
        const raw = JSON.parse(line) as Record<string, unknown>;
        proc.logs.push({ time: Number(raw.time), msg: String(raw.msg), raw });
      } catch {
        // not a log line
      }
    }
  });
  child.on('exit', (code) => (proc.exit = code));
  return proc;
}

/** The process's peak resident set so far (VmHWM), in KiB; 0 once it is gone. */
function peakRss(pid: number | undefined): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

async function probe(proc: Proc): Promise<void> {
  proc.peakRssKb = Math.max(proc.peakRssKb, peakRss(proc.child.pid));
  let status = 0;
  let detail = '';
  try {
    const res = await fetch(`http://127.0.0.1:${proc.port}/readyz`, { signal: AbortSignal.timeout(5000) });
    status = res.status;
    const body = (await res.json()) as { detail?: string; status?: string };
    detail = body.detail ?? body.status ?? '';
  } catch (err) {
    detail = `no answer (${(err as Error).name})`;
  }
  const last = proc.readiness.at(-1);
  // Progress counts change every batch: keep a distinct reason, not each count.
  const shape = (s: string) => s.replace(/[\d,]+ of [\d,]+/, 'N of M');
  proc.latest = { at: Date.now(), status, detail };
  if (!last || last.status !== status || shape(last.detail) !== shape(detail)) proc.readiness.push(proc.latest);
  if (status === 200 && proc.readyAt === null) proc.readyAt = Date.now();
}

/** The report: everything measured so far (`partial` when stopped before all three were ready). */
function report(procs: Proc[], t0: number, seedSeconds: number, indexSeconds: number, dbName: string, partial: boolean): string[] {
  const now = Date.now();
  const holders = procs.filter((p) => p.logs.some((l) => l.msg === 'upgrading stored data'));
  const firstPasses = procs.flatMap((p) => p.logs).filter((l) => l.msg === 'upgrade learner-histories: pass 1 begins').length;
  const out: string[] = [];
  out.push(`## Upgrade of ${count(USERS)} users of the old shape, three processes started together${partial ? ' (STOPPED before the end)' : ''}`);
  out.push('');
  out.push(`- database ${MONGO_URL} (${dbName}); seeded in ${seedSeconds.toFixed(0)} s, its indexes made in ${indexSeconds.toFixed(0)} s`);
  out.push(`- lease taken by: ${holders.map((p) => `process #${p.n} (role ${p.role})`).join(', ') || 'none'}; first passes begun in all: ${firstPasses}`);
  for (const h of holders) {
    const at = (msg: string) => h.logs.find((l) => l.msg === msg);
    const begin = at('upgrade learner-histories: pass 1 begins');
    const done = at('upgrade learner-histories done');
    if (begin) out.push(`- pass 1 begun ${((begin.time - t0) / 1000).toFixed(1)} s after the start`);
    if (begin && done) {
      const seconds = (done.time - begin.time) / 1000;
      out.push(`- the upgrade (every pass) done in ${seconds.toFixed(1)} s: ${count(Math.round(USERS / seconds))} users/s`);
    }
    for (const p of h.logs.filter((l) => /^upgrade learner-histories: pass \d+ upgraded/.test(l.msg))) out.push(`  - ${p.msg}`);
    const progress = h.logs.filter((l) => /: progress$/.test(l.msg));
    const last = progress.at(-1);
    if (begin && last && !done) {
      const seconds = (last.time - begin.time) / 1000;
      out.push(
        `- scanned ${count(Number(last.raw.scanned))} of ${count(Number(last.raw.total))} in ${seconds.toFixed(0)} s: ${count(Math.round(Number(last.raw.scanned) / seconds))} users/s`,
      );
    }
    out.push(`- progress lines of the holder: ${progress.length}`);
    for (const l of progress)
      out.push(
        `  - +${((l.time - t0) / 1000).toFixed(0)} s: ${count(Number(l.raw.scanned))} of ${count(Number(l.raw.total))} scanned, ${count(Number(l.raw.upgraded))} upgraded`,
      );
  }
  for (const p of procs) {
    const ready = p.readyAt === null ? 'not ready' : `ready after ${((p.readyAt - t0) / 1000).toFixed(1)} s`;
    out.push(`- process #${p.n} (role ${p.role}): ${ready}; peak RSS ${(p.peakRssKb / 1024).toFixed(0)} MiB; /readyz (each new reason, then the last):`);
    for (const r of p.readiness) out.push(`  - +${((r.at - t0) / 1000).toFixed(0)} s: ${r.status} ${r.detail}`);
    if (p.latest) out.push(`  - last, +${((p.latest.at - t0) / 1000).toFixed(0)} s: ${p.latest.status} ${p.latest.detail}`);
  }
  out.push(`- ${procs.every((p) => p.readyAt !== null) ? 'all ready' : 'not all ready'} ${((now - t0) / 1000).toFixed(1)} s after the start`);
  return out;
}

async function main(): Promise<void> {
  const dbName = `bench-upgrade-${USERS}-${process.pid}`;
  const client = new MongoClient(MONGO_URL);
  const db = client.db(dbName);
  const procs: Proc[] = [];
  let stopped = false;
  const stop = () => (stopped = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await db.dropDatabase();
    say(`seeding ${count(USERS)} users of the old shape into ${dbName}`);
    const seedStart = Date.now();
    // The records first, then the indexes (one build each, far quicker here than growing them).
    await seedOldShapeUsers(db, USERS);
    const seedSeconds = (Date.now() - seedStart) / 1000;
    const indexStart = Date.now();
    await ensureIndexes(db);
    const indexSeconds = (Date.now() - indexStart) / 1000;
    say(`seeded in ${seedSeconds.toFixed(0)} s, indexed in ${indexSeconds.toFixed(0)} s; starting three processes (${ROLES.join(', ')})`);

    const t0 = Date.now();
    for (let n = 0; n < 3; n++) procs.push(startProcess(n, dbName));
    // Every process's /readyz every 2 s (and its peak RSS) until all three are ready, or a stop.
    let lastProgress = Date.now();
    while (!stopped) {
      await Promise.all(procs.map(probe));
      if (procs.some((p) => p.exit !== undefined)) throw new Error(`a process exited early: ${procs.map((p) => `${p.n}: ${p.exit}`).join(', ')}`);
      if (procs.every((p) => p.readyAt !== null)) break;
      if (Date.now() - lastProgress > 60_000) {
        lastProgress = Date.now();
        say(procs.map((p) => `#${p.n} ${p.latest?.status} ${p.latest?.detail}`).join(' | '));
        const holder = procs.find((p) => p.logs.some((l) => l.msg === 'upgrading stored data'));
        const lastLine = holder?.logs.filter((l) => /progress$/.test(l.msg)).at(-1);
        if (lastLine) say(`holder #${holder!.n}: scanned ${count(Number(lastLine.raw.scanned))} of ${count(Number(lastLine.raw.total))}`);
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
    for (const p of procs) p.peakRssKb = Math.max(p.peakRssKb, peakRss(p.child.pid));
    const out = report(procs, t0, seedSeconds, indexSeconds, dbName, stopped);
    if (!stopped) {
      const final = await Promise.all(procs.map((p) => fetch(`http://127.0.0.1:${p.port}/readyz`).then((r) => r.status)));
      out.push(`- final /readyz: ${final.join(', ')}`);
      out.push(`- left in the old shape: ${await db.collection(COLLECTIONS.users).countDocuments({ h: { $exists: false } })}`);
    }
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => (p.exit !== undefined ? undefined : new Promise((r) => p.child.once('exit', r)))));
    out.push(`- exit codes after SIGTERM: ${procs.map((p) => p.exit).join(', ')}`);
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const p of procs) if (p.exit === undefined) p.child.kill('SIGKILL');
    if (!values.keep) await db.dropDatabase().catch(() => undefined);
    await client.close();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:upgrade failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
