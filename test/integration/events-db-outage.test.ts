// SPEC §5 handler failures and §6 shutdown: with the database unreachable an event is retried
// (logged with its event id and user id, counted in /metrics) more than EVENT_MAX_ATTEMPTS
// times without ever being dead-lettered, and applied once the database is back; a stop during
// the retries leaves it uncommitted, so the next instance applies it.
// Uses a private FerretDB on its own port: the shared one is never stopped.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { COLLECTIONS, type MembershipDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import {
  closeProducer,
  cloudEvent,
  type EventTestService,
  metricValue,
  newUserId,
  produce,
  sameDeployment,
  seedRule,
  startEventService,
  structured,
  TYPES,
  userData,
  waitFor,
} from '../helpers/events';
import { client } from '../helpers/http';
import { uniqueName } from '../helpers/stack';

const run = promisify(execFile);
const PORT = process.env.EVENTS_TEST_MONGO_PORT ?? '27018';
const stackDir = mkdtempSync(join(tmpdir(), 'cag-outage-'));
const stack = (command: 'start-db' | 'stop-db') =>
  run('bash', ['scripts/stack.sh', command], { env: { ...process.env, STACK_DIR: stackDir, STACK_MONGO_PORT: PORT }, cwd: join(__dirname, '../..') });

const FAST_RETRY = { initialMs: 100, maxMs: 1000 };
/** Small, so the outage outlasts it: a retriable failure must never use up its attempts. */
const MAX_ATTEMPTS = 2;
let service: EventTestService;

beforeAll(async () => {
  await stack('start-db');
  service = await startEventService({ MONGO_URL: `mongodb://127.0.0.1:${PORT}/`, EVENT_MAX_ATTEMPTS: String(MAX_ATTEMPTS) }, { retry: FAST_RETRY });
}, 60000);
afterAll(async () => {
  await closeProducer();
  await service?.close().catch(() => undefined);
  await stack('stop-db');
  rmSync(stackDir, { recursive: true, force: true });
}, 30000);

const readyz = async (s: EventTestService) => client(s.baseUrl).get('/readyz');
const metric = (s: EventTestService, name: string) => metricValue(s.baseUrl, name);
const logLines = (s: EventTestService) => s.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
const failureLines = (s: EventTestService) => logLines(s).filter((l) => l.msg === 'event handler failed; retrying');

test('an activation that fails while the database is down is retried beyond EVENT_MAX_ATTEMPTS, shown in /metrics not /readyz, never dead-lettered, and applied when the database returns', async () => {
  const org = uniqueName('org');
  const t = new Tenant(service.db, org);
  const group = await seedRule(t, 'outage.org');
  const id = newUserId();
  const event = cloudEvent(TYPES.activated, userData(org, { id, email: `kim@outage.org` }));

  await stack('stop-db');
  await produce(service.config.KAFKA_TOPICS[0]!, [structured(event, id)]);
  const failures = await waitFor(
    async () => failureLines(service),
    (lines) => lines.length > MAX_ATTEMPTS,
  );
  expect(failures[0]).toMatchObject({ level: 50, event_id: event.id, user_id: String(id), event_type: TYPES.activated, retriable: true });
  // The message waiting shows in /metrics; /readyz names the database only, not the message.
  expect(await metric(service, 'consumer_messages_retrying')).toBe(1);
  const degraded = await waitFor(
    () => readyz(service),
    (r) => r.status === 503,
  );
  expect(degraded.body.failing).toEqual(['database']);

  await stack('start-db');
  const membership = await waitFor(() => t.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: String(id) }));
  expect(membership).toMatchObject({ user: id, group: group.id, automatic: true });
  expect(
    (
      await waitFor(
        () => readyz(service),
        (r) => r.status === 200,
      )
    ).body,
  ).toEqual({ status: 'ready' });
  expect(
    await waitFor(
      () => metric(service, 'consumer_messages_retrying'),
      (n) => n === 0,
    ),
  ).toBe(0);
  // Attempts beyond EVENT_MAX_ATTEMPTS, and still no dead-letter copy: the failure was retriable.
  expect(failureLines(service).length).toBeGreaterThan(MAX_ATTEMPTS);
  expect(logLines(service).filter((l) => /dead-letter/.test(String(l.msg)))).toEqual([]);
  expect(service.logs.join('')).not.toContain('kim@outage.org');
}, 60000);

test('a stop during the retries ends them within the SPEC 10 s, and the uncommitted event is applied by the next instance', async () => {
  const org = uniqueName('org');
  const t = new Tenant(service.db, org);
  const group = await seedRule(t, 'restart.org');
  const id = newUserId();
  await stack('stop-db');
  await produce(service.config.KAFKA_TOPICS[0]!, [structured(cloudEvent(TYPES.activated, userData(org, { id, email: `lee@restart.org` })), id)]);
  const before = failureLines(service).length;
  await waitFor(
    async () => failureLines(service).length,
    (n) => n >= before + 2,
  );

  let timer: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    service.stop().then(() => 'stopped'),
    new Promise((r) => (timer = setTimeout(() => r('still running after 10 s'), 10000))),
  ]);
  clearTimeout(timer);
  expect(stopped).toBe('stopped');

  await stack('start-db');
  service = await startEventService(sameDeployment(service), { retry: FAST_RETRY });
  const membership = await waitFor(() => new Tenant(service.db, org).collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: String(id) }));
  expect(membership).toMatchObject({ user: id, group: group.id, automatic: true });
}, 60000);
