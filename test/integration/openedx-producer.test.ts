// SPEC §5 with the real Open edX event bus producer: edx-event-bus-kafka and openedx-events (the
// versions an LMS runs, from PyPI: scripts/openedx-producer/) send their own signals, Avro through
// the stack's schema registry, to the service's topics; the test reads the outcome through the
// REST API and the DLQ. produce.py fails on any error the library logs (it swallows them).
import { randomUUID } from 'node:crypto';
import { dlqTopic } from '../../consumers/consumer';
import { COLLECTIONS } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { type EventTestService, newUserId, readTopic, seedRule, startEventService, TYPES, waitCaughtUp } from '../helpers/events';
import { client } from '../helpers/http';
import { openedxPython, type ProducedUser, produceWithOpenedx } from '../helpers/openedx-producer';
import { SCHEMA_REGISTRY_URL, uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

beforeAll(() => {
  // Made once here (about 20 s the first time), not inside a test's timeout.
  process.env.OPENEDX_PRODUCER_PYTHON = openedxPython();
}, 180000);

describe('a single-site LMS (DEFAULT_ORGANIZATION set)', () => {
  let service: EventTestService;
  let prefix: string;
  let org: string;
  const run = randomUUID().slice(0, 8);
  const user = (n: number, domain: string, over: Partial<ProducedUser> = {}): ProducedUser => ({
    id: newUserId(),
    is_active: true,
    username: `learner${n}_${run}`,
    email: `learner${n}.${run}@${domain}`,
    name: `Learner ${n}`,
    ...over,
  });
  let admin: ReturnType<typeof client>;
  const caughtUp = async () => {
    for (const topic of service.config.KAFKA_TOPICS) await waitCaughtUp(service.config.KAFKA_GROUP_ID, topic);
  };
  const userState = async (id: number) => (await admin.get(`users/${id}/`)).body;

  beforeAll(async () => {
    prefix = uniqueName('lms');
    // The ORG of the LMS's course keys names the site, so users and courses share one organization.
    org = `Org${run}`;
    service = await startEventService({
      SCHEMA_REGISTRY_URL,
      DEFAULT_ORGANIZATION: org,
      KAFKA_TOPICS: `${prefix}-user-lifecycle,${prefix}-course-catalog`,
    });
    admin = client(service.baseUrl, await siteAdminToken(org));
  }, 60000);
  afterAll(() => service.close());

  test('registrations, logins, catalog changes, a duplicate and an older event are applied as the contract says', async () => {
    const group = await seedRule(new Tenant(service.db, org), 'school.edu');
    const ann = user(1, 'school.edu', { is_active: false });
    const bo = user(2, 'school.edu');
    const cy = user(3, 'elsewhere.org');
    const di = user(4, 'school.edu');
    const course = `course-v1:${org}+AV101+2026`;

    // An inactive registration: the learner, no membership.
    await produceWithOpenedx(prefix, [{ signal: 'registration', time: '2026-03-01T09:00:00+00:00', user: ann }]);
    await caughtUp();
    expect(await userState(ann.id)).toEqual({ id: ann.id, username: ann.username, name: ann.name, email: ann.email, membership: null });

    await produceWithOpenedx(prefix, [
      // Ann activates her email and logs in: the login stands in for the activation.
      { signal: 'login', time: '2026-03-01T10:00:00.123456+00:00', user: { ...ann, is_active: true } },
      // Bo registers already active; Cy's domain has no rule.
      { signal: 'registration', time: '2026-03-01T10:00:01+00:00', user: bo },
      { signal: 'login', time: '2026-03-01T10:00:02+00:00', user: cy },
      // Di's registration delivered twice (same event id).
      { signal: 'registration', time: '2026-03-01T10:00:03+00:00', user: di, copies: 2 },
      {
        signal: 'catalog',
        time: '2026-03-01T11:00:00+00:00',
        catalog_info: {
          course_key: course,
          name: 'Avro for Learners',
          start: '2026-04-01T00:00:00+00:00',
          end: '2026-06-30T00:00:00+00:00',
          pacing: 'self',
          hidden: false,
          invitation_only: true,
        },
      },
    ]);
    await caughtUp();
    // Older events, delivered last: they change nothing.
    await produceWithOpenedx(prefix, [
      { signal: 'login', time: '2026-03-01T09:30:00+00:00', user: { ...bo, name: 'Bo Before', is_active: false } },
      {
        signal: 'catalog',
        time: '2026-03-01T10:30:00+00:00',
        catalog_info: { course_key: course, name: 'Old Title', start: '2026-04-01T00:00:00+00:00', pacing: 'instructor' },
      },
    ]);
    await caughtUp();

    const member = { id: expect.any(Number), group: { id: group.id, name: group.name } };
    expect(await userState(ann.id)).toMatchObject({ username: ann.username, membership: member });
    expect(await userState(bo.id)).toEqual({ id: bo.id, username: bo.username, name: bo.name, email: bo.email, membership: member });
    expect(await userState(cy.id)).toMatchObject({ email: cy.email, membership: null });
    expect(await userState(di.id)).toMatchObject({ email: di.email, membership: member });
    const memberships = (await admin.get('memberships/?limit=100')).body;
    expect(memberships.results.map((m: { user: { id: number } }) => m.user.id).sort()).toEqual([ann.id, bo.id, di.id].sort());
    expect((await admin.get(`courses/${course}/`)).body).toMatchObject({ id: course, name: 'Avro for Learners', public_status: { is_public: false } });

    const metrics = (await client(service.baseUrl).get('/metrics')).body as string;
    const count = (type: string, outcome: string) =>
      Number(new RegExp(`^events_handled_total\\{type="${type.replace(/\./g, '\\.')}",outcome="${outcome}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);
    expect(count(TYPES.registered, 'duplicate')).toBe(1);
    expect(count(TYPES.login, 'dead_lettered') + count(TYPES.registered, 'dead_lettered') + count(TYPES.catalogChanged, 'dead_lettered')).toBe(0);
    // The learners' emails came in Avro; none reaches a log line.
    for (const address of [ann, bo, cy, di].map((u) => u.email)) expect(service.logs.join('\n')).not.toContain(address);
  }, 120000);
});

test('without DEFAULT_ORGANIZATION a registration (which names no organization) goes to the DLQ, key and value unchanged', async () => {
  const prefix = uniqueName('lms');
  const service = await startEventService({ SCHEMA_REGISTRY_URL, KAFKA_TOPICS: `${prefix}-user-lifecycle,${prefix}-course-catalog` });
  try {
    const learner = { id: newUserId(), is_active: true, username: `nobody_${randomUUID().slice(0, 8)}`, email: 'nobody@school.edu', name: 'No Org' };
    await produceWithOpenedx(prefix, [{ signal: 'registration', time: '2026-03-02T00:00:00+00:00', user: learner }]);
    const [dead] = await readTopic(dlqTopic(`${prefix}-user-lifecycle`), 1);
    expect(dead!.headers?.['x-dlq-reason']?.toString()).toMatch(/no organization/);
    expect(dead!.headers?.ce_type?.toString()).toBe(TYPES.registered);
    // Avro, as the producer framed it (byte 0, a schema id); the key is the username, in Avro too.
    expect(dead!.value![0]).toBe(0);
    expect(dead!.key![0]).toBe(0);
    expect(await service.db.collection(COLLECTIONS.users).countDocuments({ id: learner.id })).toBe(0);
  } finally {
    await service.close();
  }
}, 60000);
