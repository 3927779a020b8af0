// Issue 19's three findings, as plain regression tests through the real consumer on the local
// stack (SPEC §5 "the same event twice changes nothing the second time", "rules are applied once
// per activation", "different events with the same time are both applied, in arrival order").
// Every message of a test goes to one partition (a topic and partition no other test uses, or one
// an earlier test left with its every message handled), so they arrive in the order sent, and a
// test whose partition is stuck holds up no other.
// The last two tests are what the event-history property test (events-model.test.ts) found.
import { randomUUID } from 'node:crypto';
import { COLLECTIONS, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import {
  closeProducer,
  cloudEvent,
  dlqCount,
  type EventTestService,
  newUserId,
  orgWithRule,
  produceOne,
  startEventService,
  storedActive,
  structured,
  TYPES,
  userData,
  waitCommitted,
  waitFor,
} from '../helpers/events';
import { client } from '../helpers/http';
import { uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: EventTestService;

beforeAll(async () => {
  service = await startEventService();
}, 60000);
afterAll(async () => {
  await closeProducer();
  await service.close();
});

/** The service's topics: one per test. */
const topicOf = (test: 0 | 1 | 2) => service.config.KAFKA_TOPICS[test]!;
const sender =
  (topic: string, partition = 0) =>
  (message: ReturnType<typeof structured>) =>
    produceOne(topic, { ...message, partition });
const handled = (at: { topic: string; partition: number; offset: number }) => waitCommitted(service.config.KAFKA_GROUP_ID, at);

test('finding 1: a course.deleted delivered twice, for a course whose organization differs from its key ORG, leaves it deleted, sends nothing to the DLQ and later events still apply', async () => {
  const send = sender(topicOf(0));
  const org = uniqueName('tenant-a');
  const api = client(service.baseUrl, await siteAdminToken(org));
  const run = randomUUID().slice(0, 8);
  const key = `course-v1:ORGX+C1+${run}`;
  const later = `course-v1:ORGX+C2+${run}`;
  await send(
    structured(
      cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name: 'Doomed' }, organization: org }, { time: '2026-05-01T00:00:01Z' }),
      key,
    ),
  );
  const deletion = structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time: '2026-05-01T00:00:02Z' }), key);
  await send(deletion);
  await send(deletion);
  // An older catalog event naming the key's ORG (no `organization`) does not bring it back either.
  await send(structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name: 'Back?' } }, { time: '2026-05-01T00:00:01.5Z' }), key));
  const last = await send(
    structured(
      cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: later, name: 'Later' }, organization: org }, { time: '2026-05-01T00:00:03Z' }),
      later,
    ),
  );

  // The consumer got past the second deletion: the event behind it is applied.
  expect(
    (
      await waitFor(
        () => api.get(`courses/${later}/`),
        (r) => r.status === 200,
      )
    ).body,
  ).toMatchObject({ id: later, name: 'Later' });
  await handled(last);
  expect((await api.get(`courses/${key}/`)).status).toBe(404);
  const keyOrg = client(service.baseUrl, await siteAdminToken('ORGX'));
  expect((await keyOrg.get(`courses/${key}/`)).status).toBe(404);
  expect(await dlqCount(topicOf(0))).toBe(0);
}, 60000);

test('finding 2: a membership an administrator removed is not created again by the same activation delivered again, nor by a login of the same or an older time', async () => {
  const send = sender(topicOf(1));
  const { org, api, group } = await orgWithRule(service, 'again.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@again.edu`, is_active: true };
  const activation = structured(cloudEvent(TYPES.activated, userData(org, user), { time: '2026-05-02T00:00:10Z' }), id);
  await send(activation);
  const created = await waitFor(
    () => api.get(`users/${id}/`),
    (r) => r.status === 200 && r.body.membership !== null,
  );
  expect(created.body.membership.group.id).toBe(group.id);
  expect((await api.delete(`memberships/${created.body.membership.id}/`)).status).toBe(204);

  await send(activation);
  await send(structured(cloudEvent(TYPES.login, userData(org, user), { time: '2026-05-02T00:00:10Z' }), id));
  const last = await send(structured(cloudEvent(TYPES.login, userData(org, user), { time: '2026-05-02T00:00:09Z' }), id));
  await handled(last);

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });
  expect((await api.get('memberships/')).body.count).toBe(0);
}, 60000);

test('finding 3: a registration (inactive) and an activation of the same time, another id: the learner ends active and a member by the rule', async () => {
  const send = sender(topicOf(2));
  const { org, api, group } = await orgWithRule(service, 'same-time.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@same-time.edu` };
  const time = '2026-05-03T00:00:00Z';
  await send(structured(cloudEvent(TYPES.registered, userData(org, { ...user, is_active: false }), { time }), id));
  const last = await send(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time }), id));
  await handled(last);

  expect((await api.get(`users/${id}/`)).body.membership).toMatchObject({ group: { id: group.id } });
  const stored = await new Tenant(service.db, org).collection<UserDoc>(COLLECTIONS.users).findById(String(id));
  expect(stored?.is_active).toBe(true);
}, 60000);

test('a retirement, then an activation-capable event of the same time (another id): the learner is back, active, and a member by the rule', async () => {
  const send = sender(topicOf(1), 1);
  const { org, api, group } = await orgWithRule(service, 'back.edu');
  const id = newUserId();
  const time = '2026-05-04T00:00:05Z';
  await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time }), id));
  // docs/events.md: of the same time, after the retirement: applied (version time#2), and the
  // learner created by an activation-capable event gets the rules at once.
  const last = await send(structured(cloudEvent(TYPES.login, userData(org, { id, email: `learner${id}@back.edu`, is_active: true }), { time }), id));
  await handled(last);

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
}, 60000);

test('a stale retirement counts as a deactivation: an activation older than it applies no rule', async () => {
  const send = sender(topicOf(2), 1);
  const { org, api } = await orgWithRule(service, 'late.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@late.edu`, is_active: true };
  // The record is from a newer update (no activation); the retirement and the activation arrive late.
  await send(structured(cloudEvent(TYPES.updated, userData(org, user), { time: '2026-05-05T00:00:09Z' }), id));
  await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-05-05T00:00:05Z' }), id));
  const last = await send(structured(cloudEvent(TYPES.activated, userData(org, user), { time: '2026-05-05T00:00:04Z' }), id));
  await handled(last);

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });
}, 60000);

test('more than 16 events of one time: a redelivery of the first is still a duplicate (an activation then a deactivation keep the learner inactive and the removed membership removed)', async () => {
  const send = sender(topicOf(0), 1);
  const { org, api } = await orgWithRule(service, 'crowd.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@crowd.edu` };
  const time = '2026-05-06T00:00:00Z';
  const activation = structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time }), id);
  await handled(await send(activation));
  const member = await waitFor(
    () => api.get(`users/${id}/`),
    (r) => r.status === 200 && r.body.membership !== null,
  );
  expect((await api.delete(`memberships/${member.body.membership.id}/`)).status).toBe(204);
  // Sixteen more distinct events of the same time, the learner shown inactive.
  for (let i = 0; i < 16; i++) await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false }), { time }), id));
  await handled(await send(activation));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });
  expect(await storedActive(service, org, id)).toBe(false);
}, 60000);

test('an event without time, delivered again as another Kafka record with a later timestamp, changes nothing the second time', async () => {
  const send = sender(topicOf(0), 2);
  const { org, api } = await orgWithRule(service, 'untimed.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@untimed.edu` };
  const first = Date.parse('2026-05-07T00:00:00Z');
  const { time: _none, ...untimed } = cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }));
  const copy = (timestamp: number) => ({ ...structured(untimed as ReturnType<typeof cloudEvent>, id), timestamp: String(timestamp) });
  await handled(await send(copy(first)));
  await waitFor(
    () => api.get(`users/${id}/`),
    (r) => r.status === 200 && r.body.membership !== null,
  );
  // A newer deactivation, then the same activation again (a producer's retry: a new record, a later timestamp).
  await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false }), { time: new Date(first + 1000).toISOString() }), id));
  const member = (await api.get(`users/${id}/`)).body.membership;
  if (member) expect((await api.delete(`memberships/${member.id}/`)).status).toBe(204);
  await handled(await send(copy(first + 2000)));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });
  expect(await storedActive(service, org, id)).toBe(false);
}, 60000);

test.each([
  ['an update showing the learner inactive', 'update'],
  ['a retirement', 'retirement'],
])(
  'a deactivation (%s) arriving after a newer login: the login is the activation it is in event time, and its rules apply',
  async (_name, kind) => {
    const send = sender(topicOf(kind === 'update' ? 1 : 2), 2);
    const { org, api, group } = await orgWithRule(service, `late-${kind}.edu`);
    const id = newUserId();
    const user = { id, email: `learner${id}@late-${kind}.edu` };
    await handled(await send(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time: '2026-05-08T00:00:01Z' }), id)));
    const member = await waitFor(
      () => api.get(`users/${id}/`),
      (r) => r.status === 200 && r.body.membership !== null,
    );
    expect((await api.delete(`memberships/${member.body.membership.id}/`)).status).toBe(204);
    await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time: '2026-05-08T00:00:03Z' }), id));
    const late =
      kind === 'update'
        ? cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false }), { time: '2026-05-08T00:00:02Z' })
        : cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-05-08T00:00:02Z' });
    await handled(await send(structured(late, id)));

    // In event time: activation, (removal), deactivation, login: the login activates the learner again.
    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
  },
  60000,
);

// Issue 27, item 2: an activation (T1) and a deactivation (T2 > T1) end the same whatever order
// they arrive in, and rules are still applied once per activation period, so an administrator's
// later change stands (docs/events.md, late activations).
test.each([
  ['in time order', 0, [0, 1]],
  ['the deactivation first', 1, [1, 0]],
] as const)(
  'an activation (T1) and a deactivation (T2 > T1) arriving %s: the learner ends inactive and a member by the rule',
  async (_name, partition, order) => {
    const send = sender(topicOf(0), partition);
    const domain = `order-${partition}.edu`;
    const { org, api, group } = await orgWithRule(service, domain);
    const id = newUserId();
    const user = { id, email: `learner${id}@${domain}` };
    const events = [
      structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time: '2026-05-09T00:00:01Z' }), id),
      structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false }), { time: '2026-05-09T00:00:02Z' }), id),
    ];
    let last = null;
    for (const i of order) last = await send(events[i]!);
    await handled(last!);

    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
    expect(await storedActive(service, org, id)).toBe(false);
  },
  60000,
);

test("a late activation applies the rules once for its period: an administrator's removal after it stands against a redelivery and another activation of that period", async () => {
  const send = sender(topicOf(1));
  const { org, api, group } = await orgWithRule(service, 'late-period.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@late-period.edu` };
  await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false }), { time: '2026-05-10T00:00:09Z' }), id));
  const late = structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time: '2026-05-10T00:00:04Z' }), id);
  await send(late);
  const member = await waitFor(
    () => api.get(`users/${id}/`),
    (r) => r.status === 200 && r.body.membership !== null,
  );
  expect(member.body.membership.group.id).toBe(group.id);
  expect((await api.delete(`memberships/${member.body.membership.id}/`)).status).toBe(204);

  await send(late);
  await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time: '2026-05-10T00:00:06Z' }), id));
  await handled(await send(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time: '2026-05-10T00:00:03Z' }), id)));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });
  expect(await storedActive(service, org, id)).toBe(false);
}, 60000);

test("a late activation of a period whose rules were applied applies nothing: the administrator's removal stands", async () => {
  const send = sender(topicOf(2));
  const { org, api } = await orgWithRule(service, 'applied-period.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@applied-period.edu` };
  await send(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time: '2026-05-11T00:00:04Z' }), id));
  const member = await waitFor(
    () => api.get(`users/${id}/`),
    (r) => r.status === 200 && r.body.membership !== null,
  );
  expect((await api.delete(`memberships/${member.body.membership.id}/`)).status).toBe(204);
  await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false }), { time: '2026-05-11T00:00:09Z' }), id));
  await handled(await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time: '2026-05-11T00:00:06Z' }), id)));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });
}, 60000);
