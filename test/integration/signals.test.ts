// SPEC §6: "SIGTERM and SIGINT: ... exit 0 within 10 seconds, in every state (starting, waiting
// for a dependency, running)", on real `src/main.ts` processes: signalled while the modules load,
// while the database or the broker is waited for with backoff, while running (a consumer-only
// process, which serves its probes on PORT too), and a second signal while draining requests.
import { MongoClient } from 'mongodb';
import { waitFor } from '../helpers/events';
import { slowPost } from '../helpers/http';
import { killAll, type ServiceProcess, spawnService } from '../helpers/service-process';
import { KAFKA_BROKERS, MONGO_URL, uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

/** Nothing listens on these ports: connections are refused at once. */
const NO_DATABASE = 'mongodb://127.0.0.1:1/';
const NO_BROKER = '127.0.0.1:2';
/** The SPEC's bound. */
const STOP_LIMIT_MS = 10000;
const spawned: ServiceProcess[] = [];
const databases: string[] = [];

afterAll(async () => {
  killAll(spawned);
  const mongo = await new MongoClient(MONGO_URL).connect();
  await Promise.all(databases.map((name) => mongo.db(name).dropDatabase()));
  await mongo.close();
});

function start(env: Record<string, string>): ServiceProcess {
  const database = uniqueName('sig');
  databases.push(database);
  const p = spawnService({
    PORT: '0',
    MONGO_URL,
    MONGO_DB: database,
    KAFKA_BROKERS,
    KAFKA_GROUP_ID: uniqueName('g'),
    KAFKA_TOPICS: uniqueName('topic'),
    CHANGES_TOPIC: '',
    ...env,
  });
  spawned.push(p);
  return p;
}

/** The parsed JSON lines the process logged so far. */
const lines = (p: ServiceProcess) =>
  p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; port?: number; attempt?: number });

const logged = (p: ServiceProcess, msg: string, timeoutMs = 30000) =>
  waitFor(async () => lines(p).find((l) => l.msg === msg), Boolean, timeoutMs).catch((err: Error) => {
    throw new Error(`${err.message}: "${msg}" never logged; the process wrote:\n${p.output().slice(-2000)}`);
  });

/** The port the process listens on, once its /readyz says ready. */
async function readyPort(p: ServiceProcess): Promise<number> {
  const { port } = (await logged(p, 'listening'))!;
  await waitFor(
    () => fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status),
    (s) => s === 200,
    30000,
  );
  return port!;
}

/** Sends `signal` and returns the exit code and how long the process took to go. */
async function stopWith(p: ServiceProcess, signal: NodeJS.Signals) {
  const at = Date.now();
  p.child.kill(signal);
  const exit = await p.exited;
  return { code: exit.code, signal: exit.signal, ms: exit.at - at };
}

test.each(['SIGTERM', 'SIGINT'] as const)(
  '%s while starting (the modules still loading): exit 0 within 10 s',
  async (signal) => {
    const p = start({ SERVICE_ROLE: 'all' });
    await logged(p, 'starting');
    const exit = await stopWith(p, signal);
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(STOP_LIMIT_MS);
    expect(p.output()).toMatch(/"msg":"stopped"/);
  },
  40000,
);

test('SIGTERM while the database is waited for with backoff: exit 0 within 10 s', async () => {
  const p = start({ SERVICE_ROLE: 'all', MONGO_URL: NO_DATABASE });
  // The second try: the process is in its backoff loop, not at its first attempt.
  await waitFor(
    async () => lines(p).filter((l) => l.msg === 'database not reachable yet; retrying').length,
    (n) => n >= 2,
    30000,
  );
  const exit = await stopWith(p, 'SIGTERM');
  expect(exit).toMatchObject({ code: 0, signal: null });
  expect(exit.ms).toBeLessThan(STOP_LIMIT_MS);
}, 40000);

test.each(['SIGTERM', 'SIGINT'] as const)(
  '%s while the broker is waited for with backoff (a consumer-only process): exit 0 within 10 s',
  async (signal) => {
    const p = start({ SERVICE_ROLE: 'consumer', KAFKA_BROKERS: NO_BROKER });
    await waitFor(
      async () => lines(p).filter((l) => l.msg === 'broker not reachable yet; retrying').length,
      (n) => n >= 2,
      30000,
    );
    const exit = await stopWith(p, signal);
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(STOP_LIMIT_MS);
  },
  40000,
);

test('SIGINT while running as a consumer, after its own /readyz said ready: exit 0 within 10 s', async () => {
  const p = start({ SERVICE_ROLE: 'consumer' });
  await readyPort(p);
  const exit = await stopWith(p, 'SIGINT');
  expect(exit).toMatchObject({ code: 0, signal: null });
  expect(exit.ms).toBeLessThan(STOP_LIMIT_MS);
  expect(p.output()).toMatch(/"msg":"consumer stopped"/);
}, 40000);

test('SIGTERM, then SIGINT while draining a request in flight: the request completes, exit 0 within 10 s', async () => {
  const p = start({ SERVICE_ROLE: 'api' });
  const port = await readyPort(p);
  const inFlight = slowPost(
    port,
    '/course_access_groups/api/v1/course-access-groups/',
    await siteAdminToken('org-sig'),
    JSON.stringify({ name: 'drained', description: '' }),
  );
  await inFlight.connected;
  await new Promise((r) => setTimeout(r, 200)); // the server has read the headers

  const at = Date.now();
  p.child.kill('SIGTERM');
  await logged(p, 'shutting down');
  p.child.kill('SIGINT'); // a second signal while draining changes nothing
  inFlight.finish();
  expect(await inFlight.response).toBe(201);
  const exit = await p.exited;
  expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
  expect(exit.at - at).toBeLessThan(STOP_LIMIT_MS);
  expect(lines(p).filter((l) => l.msg === 'shutting down')).toHaveLength(1);
}, 40000);
