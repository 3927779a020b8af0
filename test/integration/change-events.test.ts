// docs/events-published.md / issue 14: every change that can alter an access decision or a listing is published
// to CHANGES_TOPIC as a CloudEvent carrying the record's state (or null: gone) and its cause, keyed
// by record, with no PII. Read back with kafkajs, as an LMS would.
import { type ChangeEvent, changeEventErrors, EVENT_TYPE_PREFIX } from '../../src/changes/events';
import { type ChangeReader, changeReader, orderViolations } from '../helpers/changes';
import {
  closeProducer,
  cloudEvent,
  type EventTestService,
  newUserId,
  produce,
  seedRule,
  startEventService,
  structured,
  TYPES,
  userData,
} from '../helpers/events';
import { client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

const T = (name: string) => `${EVENT_TYPE_PREFIX}.${name}.changed.v1`;
let service: EventTestService;
let reader: ChangeReader;
const topic = uniqueName('changes');

beforeAll(async () => {
  reader = await changeReader(topic);
  service = await startEventService({ CHANGES_TOPIC: topic, LOG_LEVEL: 'info' });
}, 60000);
afterAll(async () => {
  await reader?.close();
  await closeProducer();
  await service?.close();
});

const ADMIN_ID = 77;
const about =
  (subject: string, ok: (e: ChangeEvent) => boolean = () => true) =>
  (e: ChangeEvent) =>
    e.subject === subject && ok(e);

test('admin changes of every kind are published with the record as it is now, their cause, actor and request id', async () => {
  const org = uniqueName('org');
  const seed = seeder(service.db, org);
  const [u1, u2] = [newUserId(), newUserId()];
  await seed.user(u1, { email: `u${u1}@pupils.example` });
  await seed.user(u2, { email: `u${u2}@school.example` });
  const course = `course-v1:${org}+C1+2026`;
  await seed.course(course);
  const http = client(service.baseUrl, await siteAdminToken(org, ADMIN_ID));
  let n = 0;
  const rid = () => `rid-${org}-${++n}`;
  const ok = async <R>(p: Promise<{ status: number; body: R }>, status: number) => {
    const res = await p;
    expect(res.status).toBe(status);
    return res.body;
  };
  const admin = { type: 'user', user_id: ADMIN_ID, role: 'site_admin' };

  const requestId = rid();
  const group = await ok(http.post('course-access-groups/', { name: 'Readers', description: 'd' }, { 'X-Request-Id': requestId }), 201);
  const created = (await reader.find(about(`course-access-groups/${group.id}`))).event;
  expect(created.type).toBe(T('group'));
  expect(created.data).toEqual({
    organization: org,
    version: expect.any(Number),
    cause: 'admin',
    actor: admin,
    request_id: requestId,
    group: { id: group.id, name: 'Readers', description: 'd' },
  });

  await ok(http.patch(`course-access-groups/${group.id}/`, { name: 'Writers' }, { 'X-Request-Id': rid() }), 200);
  const renamed = (await reader.find(about(`course-access-groups/${group.id}`, (e) => (e.data.group as { name: string } | null)?.name === 'Writers'))).event;
  expect(renamed.data.version).toBeGreaterThan(created.data.version as number);

  const other = await ok(http.post('course-access-groups/', { name: 'Other', description: '' }), 201);
  const membership = await ok(http.post('memberships/', { user: u1, group: group.id }, { 'X-Request-Id': rid() }), 201);
  const joined = (await reader.find(about(`memberships/${u1}`))).event;
  expect(joined.type).toBe(T('membership'));
  expect(joined.data.membership).toEqual({ id: membership.id, user_id: u1, group_id: group.id, automatic: false });
  expect(joined.data.cause).toBe('admin');

  await ok(http.patch(`memberships/${membership.id}/`, { group: other.id }), 200);
  await reader.find(about(`memberships/${u1}`, (e) => (e.data.membership as { group_id: number } | null)?.group_id === other.id));

  const link = await ok(http.post('group-courses/', { course, group: group.id }), 201);
  // A link's and a rule's subject is their id, whatever they join (docs/events-published.md).
  const linked = (await reader.find(about(`group-courses/${link.id}`))).event;
  expect(linked.type).toBe(T('group_course'));
  expect(linked.data.group_course).toEqual({ id: link.id, course_id: course, group_id: group.id });

  const record = await ok(http.post('public-courses/', { course }), 201);
  const published = (await reader.find(about(`public-courses/${course}`))).event;
  expect(published.type).toBe(T('public_course'));
  expect(published.data.public_course).toEqual({ id: record.id, course_id: course });

  const rule = await ok(http.post('membership-rules/', { name: 'School', domain: 'School.example', group: group.id }), 201);
  const ruled = (await reader.find(about(`membership-rules/${rule.id}`))).event;
  expect(ruled.type).toBe(T('membership_rule'));
  expect(ruled.data.membership_rule).toEqual({ id: rule.id, name: 'School', domain: 'school.example', group_id: group.id });

  await ok(http.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true }), 200);
  const flag = (await reader.find(about(`site-configuration/${org}`))).event;
  expect(flag.type).toBe(T('site_configuration'));
  expect(flag.data.site_configuration).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: true });

  // A rule applied by an administrator: the membership is the rule's doing, on the admin's request.
  expect(await ok(http.post(`membership-rules/${rule.id}/apply/`), 200)).toEqual({ created: 1 });
  const byRule = (await reader.find(about(`memberships/${u2}`))).event;
  expect(byRule.data).toMatchObject({ cause: 'rule', actor: admin, membership: { user_id: u2, group_id: group.id, automatic: true } });

  // A PATCH of what a rule joins is one event on the rule's own subject, with the new record.
  await ok(http.patch(`membership-rules/${rule.id}/`, { domain: 'College.example' }), 200);
  const moved = (
    await reader.find(about(`membership-rules/${rule.id}`, (e) => (e.data.membership_rule as { domain: string } | null)?.domain === 'college.example'))
  ).event;
  expect(moved.data.membership_rule).toEqual({ id: rule.id, name: 'School', domain: 'college.example', group_id: group.id });

  await ok(http.delete(`public-courses/${record.id}/`), 204);
  await reader.find(about(`public-courses/${course}`, (e) => e.data.public_course === null));

  // Deleting a group: the group is gone (admin), and what hung off it goes by cascade.
  await ok(http.delete(`course-access-groups/${group.id}/`), 204);
  const gone = (await reader.find(about(`course-access-groups/${group.id}`, (e) => e.data.group === null))).event;
  expect(gone.data.cause).toBe('admin');
  for (const subject of [`memberships/${u2}`, `group-courses/${link.id}`, `membership-rules/${rule.id}`]) {
    const cascade = (await reader.find(about(subject, (e) => e.data.cause === 'cascade'))).event;
    expect(Object.values(cascade.data).includes(null)).toBe(true);
  }
  // u1's membership (moved to the other group) is untouched: its newest event still has it.
  expect(reader.latest().get(`memberships/${u1}`)!.data.membership).toMatchObject({ group_id: other.id });
}, 90000);

test('changes made by LMS events are published too: a rule on activation, a retirement, a course deletion cascade', async () => {
  const org = uniqueName('org');
  const seed = seeder(service.db, org);
  const group = await seedRule(seed.tenant, 'lms.example');
  const course = `course-v1:${org}+C2+2026`;
  await seed.course(course);
  const http = client(service.baseUrl, await siteAdminToken(org, ADMIN_ID));
  const link = await http.post('group-courses/', { course, group: group.id });
  expect(link.status).toBe(201);
  expect((await http.post('public-courses/', { course })).status).toBe(201);

  const [activated, lifecycle, catalog] = service.config.KAFKA_TOPICS;
  const user = newUserId();
  const activation = cloudEvent(TYPES.activated, userData(org, { id: user, email: `Someone.${user}@LMS.example`, is_active: true }));
  await produce(activated!, [structured(activation, user)]);
  const joined = (await reader.find(about(`memberships/${user}`))).event;
  expect(joined.data).toMatchObject({
    organization: org,
    cause: 'rule',
    actor: { type: 'lms' },
    request_id: activation.id,
    membership: { user_id: user, group_id: group.id, automatic: true },
  });

  await produce(lifecycle!, [structured(cloudEvent(TYPES.retired, { user: { id: user }, organization: org }), user)]);
  const left = (await reader.find(about(`memberships/${user}`, (e) => e.data.membership === null))).event;
  expect(left.data).toMatchObject({ cause: 'event', actor: { type: 'lms' } });
  expect(left.data.version).toBeGreaterThan(joined.data.version as number);

  await produce(catalog!, [structured(cloudEvent(TYPES.courseDeleted, { course_key: course }), course)]);
  for (const subject of [`group-courses/${link.body.id}`, `public-courses/${course}`]) {
    const e = (await reader.find(about(subject, (x) => x.data.cause === 'cascade'))).event;
    expect(e.data).toMatchObject({ actor: { type: 'lms' } });
    expect(Object.values(e.data).includes(null)).toBe(true);
  }
}, 90000);

test('every event received is a valid CloudEvent of its type, keyed by its subject, ordered per record, with no email anywhere', async () => {
  expect(reader.received.length).toBeGreaterThan(15);
  for (const r of reader.received) {
    expect({ subject: r.event.subject, errors: changeEventErrors(r.event) }).toEqual({ subject: r.event.subject, errors: [] });
    expect(r.key).toBe(r.event.subject);
    expect(r.headers).toEqual({ 'content-type': 'application/cloudevents+json' });
    expect(r.event.source).toBe(`/course-access-groups/organizations/${r.event.data.organization}`);
    // Users' emails ("...@pupils.example", "...@LMS.example") never leave the service.
    expect(`${r.value}${JSON.stringify(r.headers)}`).not.toMatch(/@/);
  }
  expect(orderViolations(reader.received)).toEqual([]);
  const types = new Set(reader.received.map((r) => r.event.type));
  for (const t of ['group', 'membership', 'group_course', 'public_course', 'membership_rule', 'site_configuration']) expect(types).toContain(T(t));
  // And the metrics count what was published.
  const metrics = await client(service.baseUrl).get('/metrics');
  expect(metrics.body).toMatch(new RegExp(`changes_published_total\\{type="${T('membership').replace(/\./g, '\\.')}"\\} \\d+`));
  expect(metrics.body).toMatch(/change_relay_leader 1/);
});
