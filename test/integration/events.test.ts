// SPEC §5: events consumed from Kafka, against the real local Kafka and FerretDB.
import { randomUUID } from 'node:crypto';
import { dlqTopic } from '../../consumers/consumer';
import { COLLECTIONS, type CourseDoc, type GroupCourseDoc, type MembershipDoc, type PublicCourseDoc, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { normalizeEventTime } from '../../src/domain/event-time';
import { createMembership } from '../../src/domain/memberships';
import {
  binary,
  closeProducer,
  cloudEvent,
  type EventTestService,
  newUserId,
  produce,
  produceOne,
  readTopic,
  sameDeployment,
  seedRule,
  startEventService,
  structured,
  TYPES,
  userData,
  waitCaughtUp,
  waitCommitted,
  waitFor,
} from '../helpers/events';
import { client } from '../helpers/http';
import { uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: EventTestService;
let activatedTopic: string;
let lifecycleTopic: string;
let catalogTopic: string;
/** Every email an event of this file carried: none may appear in a log line. */
const emails: string[] = [];

beforeAll(async () => {
  service = await startEventService();
  [activatedTopic, lifecycleTopic, catalogTopic] = service.config.KAFKA_TOPICS as [string, string, string];
}, 60000);
afterAll(async () => {
  await closeProducer();
  await service.close();
});

const tenant = (org: string) => new Tenant(service.db, org);
const userIn = (org: string, id: number) =>
  tenant(org)
    .collection<UserDoc>(COLLECTIONS.users)
    .findOne({ _id: String(id) });
const membershipIn = (org: string, id: number) =>
  tenant(org)
    .collection<MembershipDoc>(COLLECTIONS.memberships)
    .findOne({ _id: String(id) });
const email = (local: string, domain: string) => {
  const address = `${local}.${randomUUID().slice(0, 8)}@${domain}`;
  emails.push(address);
  return address;
};
const processed = (at: { topic: string; partition: number; offset: number }) => waitCommitted(service.config.KAFKA_GROUP_ID, at);

test('account.activated: the user is stored as active and the rule of the email domain, whatever its case, makes them an automatic member', async () => {
  const org = uniqueName('org');
  const group = await seedRule(tenant(org), 'example.com');
  const id = newUserId();
  const address = email('Ann', 'Example.COM');
  await produce(activatedTopic, [structured(cloudEvent(TYPES.activated, userData(org, { id, email: address, is_active: false })), id)]);

  const membership = await waitFor(() => membershipIn(org, id));
  expect(membership).toMatchObject({ user: id, group: group.id, automatic: true, org });
  expect(await userIn(org, id)).toMatchObject({
    id,
    is_active: true,
    email: address,
    email_lower: address.toLowerCase(),
    is_staff: false,
    is_site_admin: false,
  });
  // The group the membership points at is the one the admin API serves.
  const admin = client(service.baseUrl, await siteAdminToken(org));
  expect((await admin.get(`course-access-groups/${group.id}/`)).body).toMatchObject({ id: group.id });
});

test('registration.completed of an inactive user stores the user without a membership; the later activation creates it', async () => {
  const org = uniqueName('org');
  const group = await seedRule(tenant(org), 'school.edu');
  const id = newUserId();
  const user = { id, email: email('bo', 'school.edu') };
  const at = await produceOne(lifecycleTopic, structured(cloudEvent(TYPES.registered, userData(org, { ...user, is_active: false })), id));
  await processed(at);
  expect(await userIn(org, id)).toMatchObject({ is_active: false });
  expect(await membershipIn(org, id)).toBeNull();

  await produce(activatedTopic, [structured(cloudEvent(TYPES.activated, userData(org, user)), id)]);
  expect(await waitFor(() => membershipIn(org, id))).toMatchObject({ group: group.id, automatic: true });
});

test('registration.completed of a user already active applies the rules', async () => {
  const org = uniqueName('org');
  const group = await seedRule(tenant(org), 'school.edu');
  const id = newUserId();
  await produce(lifecycleTopic, [structured(cloudEvent(TYPES.registered, userData(org, { id, email: email('cy', 'school.edu'), is_active: true })), id)]);
  expect(await waitFor(() => membershipIn(org, id))).toMatchObject({ group: group.id, automatic: true });
});

test('user.updated stores profile and flags but applies no rule', async () => {
  const org = uniqueName('org');
  await seedRule(tenant(org), 'school.edu');
  const id = newUserId();
  const at = await produceOne(
    lifecycleTopic,
    structured(
      cloudEvent(TYPES.updated, userData(org, { id, email: email('di', 'school.edu'), name: 'Di', is_active: true, is_staff: true, is_site_admin: true })),
      id,
    ),
  );
  await processed(at);
  expect(await userIn(org, id)).toMatchObject({ name: 'Di', is_active: true, is_staff: true, is_site_admin: true });
  expect(await membershipIn(org, id)).toBeNull();
});

test('an existing manual membership is kept when a rule matches at activation', async () => {
  const org = uniqueName('org');
  await seedRule(tenant(org), 'school.edu');
  const manualGroup = await seedRule(tenant(org), 'other.edu');
  const id = newUserId();
  // Registered inactive, then given a group by an administrator: a membership is always a learner's.
  await processed(
    await produceOne(lifecycleTopic, structured(cloudEvent(TYPES.registered, userData(org, { id, email: email('ed', 'school.edu'), is_active: false })), id)),
  );
  const manual = await createMembership(tenant(org), { user: id, group: manualGroup.id });
  const at = await produceOne(activatedTopic, structured(cloudEvent(TYPES.activated, userData(org, { id, email: email('ed', 'school.edu') })), id));
  await processed(at);
  expect(await userIn(org, id)).toMatchObject({ is_active: true });
  expect(await membershipIn(org, id)).toEqual(manual);
});

test('the same activation delivered twice leaves one membership, and the second delivery counts as a duplicate', async () => {
  const org = uniqueName('org');
  await seedRule(tenant(org), 'twice.org');
  const id = newUserId();
  const message = structured(cloudEvent(TYPES.activated, userData(org, { id, email: email('fay', 'twice.org') })), id);
  await produceOne(activatedTopic, message);
  const second = await produceOne(activatedTopic, message);
  await processed(second);
  const memberships = await tenant(org).collection<MembershipDoc>(COLLECTIONS.memberships).find({}).toArray();
  expect(memberships.map((m) => m.user)).toEqual([id]);
  const metrics = (await client(service.baseUrl).get('/metrics')).body as string;
  expect(metrics).toMatch(/^events_handled_total\{type="org\.openedx\.learning\.user\.account\.activated\.v1",outcome="duplicate"\} [1-9]/m);
  expect(metrics).toMatch(/^event_handler_duration_seconds_count\{type="org\.openedx\.learning\.user\.account\.activated\.v1"\} [1-9]/m);
});

test('two consumers applying the same activations at once give each user exactly one membership', async () => {
  // Two instances in different consumer groups over one database and the same fresh topics:
  // every event is applied twice, at the same time.
  const first = await startEventService();
  const second = await startEventService({ ...sameDeployment(first), KAFKA_GROUP_ID: uniqueName('rival') });
  try {
    const org = uniqueName('org');
    const t = new Tenant(first.db, org);
    const group = await seedRule(t, 'race.org');
    const ids = Array.from({ length: 30 }, () => newUserId());
    const topic = first.config.KAFKA_TOPICS[0]!;
    await produce(
      topic,
      ids.map((id) => structured(cloudEvent(TYPES.activated, userData(org, { id, email: email('race', 'race.org') })), id)),
    );
    await Promise.all([waitCaughtUp(first.config.KAFKA_GROUP_ID, topic), waitCaughtUp(second.config.KAFKA_GROUP_ID, topic)]);
    const all = await t.collection<MembershipDoc>(COLLECTIONS.memberships).find({}).toArray();
    expect(all.map((m) => m.user).sort()).toEqual([...ids].sort());
    expect(new Set(all.map((m) => m.id)).size).toBe(ids.length);
    expect(all.every((m) => m.group === group.id && m.automatic)).toBe(true);
    expect(await t.collection<UserDoc>(COLLECTIONS.users).countDocuments()).toBe(ids.length);
  } finally {
    await second.stop();
    await first.close();
  }
}, 60000);

test('an older user.updated delivered after a newer one does not overwrite the profile', async () => {
  const org = uniqueName('org');
  const id = newUserId();
  const address = email('gil', 'school.edu');
  const newer = cloudEvent(TYPES.updated, userData(org, { id, email: address, name: 'New Name', is_active: true }), { time: '2026-06-01T12:00:00.000002Z' });
  const older = cloudEvent(TYPES.updated, userData(org, { id, email: address, name: 'Old Name', is_active: false }), { time: '2026-06-01T12:00:00.000001Z' });
  await produceOne(lifecycleTopic, structured(newer, id));
  const at = await produceOne(lifecycleTopic, structured(older, id));
  await processed(at);
  expect(await userIn(org, id)).toMatchObject({ name: 'New Name', is_active: true, event_time: normalizeEventTime(newer.time!) });
});

test('user.retired deletes the user and their membership, and an older activation arriving later does not bring them back', async () => {
  const org = uniqueName('org');
  await seedRule(tenant(org), 'gone.org');
  const id = newUserId();
  const user = { id, email: email('hal', 'gone.org') };
  await produce(activatedTopic, [structured(cloudEvent(TYPES.activated, userData(org, user), { time: '2026-07-01T00:00:00Z' }), id)]);
  await waitFor(() => membershipIn(org, id));

  await produce(lifecycleTopic, [structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-07-02T00:00:00Z' }), id)]);
  await waitFor(async () => (await userIn(org, id)) === null && (await membershipIn(org, id)) === null);

  // The activation topic is not ordered with the lifecycle topic: a late, older activation.
  const late = await produceOne(activatedTopic, structured(cloudEvent(TYPES.activated, userData(org, user), { time: '2026-07-01T12:00:00Z' }), id));
  await processed(late);
  expect(await userIn(org, id)).toBeNull();
  expect(await membershipIn(org, id)).toBeNull();
});

test('catalog_info.changed stores the course in `organization`, else in the ORG of its course-v1 key', async () => {
  const keyOrg = uniqueName('Org').replace(/_/g, '');
  const withoutOrg = `course-v1:${keyOrg}+CS101+2026`;
  const namedOrg = uniqueName('org');
  const withOrg = `course-v1:${keyOrg}+CS102+2026`;
  await produce(catalogTopic, [
    structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: withoutOrg, name: 'Intro' } }), withoutOrg),
    structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: withOrg, name: 'Advanced' }, organization: namedOrg }), withOrg),
  ]);
  const courses = (org: string) => tenant(org).collection<CourseDoc>(COLLECTIONS.courses);
  expect(await waitFor(() => courses(keyOrg).findOne({ _id: withoutOrg }))).toMatchObject({ id: withoutOrg, name: 'Intro' });
  expect(await waitFor(() => courses(namedOrg).findOne({ _id: withOrg }))).toMatchObject({ id: withOrg, name: 'Advanced' });
  expect(await courses(keyOrg).findOne({ _id: withOrg })).toBeNull();
});

test('course.deleted deletes the course, its group links and its public record, and nothing of other courses', async () => {
  const org = uniqueName('org');
  const t = tenant(org);
  const group = await seedRule(t, 'any.org');
  const [doomed, kept] = [`course-v1:X+DEL+${randomUUID().slice(0, 6)}`, `course-v1:X+KEEP+${randomUUID().slice(0, 6)}`];
  for (const key of [doomed, kept]) {
    await produce(catalogTopic, [structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name: key }, organization: org }), key)]);
  }
  await waitFor(
    () => t.collection<CourseDoc>(COLLECTIONS.courses).countDocuments(),
    (n) => n === 2,
  );
  for (const key of [doomed, kept]) {
    await t
      .collection<GroupCourseDoc>(COLLECTIONS.groupCourses)
      .insertOne({ _id: `${key}|${group.id}`, id: await t.nextId('group_courses'), course: key, group: group.id });
    await t.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).insertOne({ _id: key, id: await t.nextId('public_courses'), course: key });
  }

  await produce(catalogTopic, [structured(cloudEvent(TYPES.courseDeleted, { course_key: doomed }), doomed)]);
  await waitFor(async () => (await t.collection<CourseDoc>(COLLECTIONS.courses).findOne({ _id: doomed })) === null);
  // The course goes first, what hung on it right after (versioned-records.ts deleteIfNewer).
  await waitFor(
    async () =>
      (await t.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).countDocuments({ course: doomed })) +
        (await t.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).countDocuments({ course: doomed })) ===
      0,
  );
  expect(await t.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).find({}).toArray()).toEqual([expect.objectContaining({ course: kept })]);
  expect(await t.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).find({}).toArray()).toEqual([expect.objectContaining({ course: kept })]);
  expect(await t.collection<CourseDoc>(COLLECTIONS.courses).findOne({ _id: kept })).not.toBeNull();
});

test('a binary-mode event (ce_* headers, data in the value) is applied', async () => {
  const org = uniqueName('org');
  const group = await seedRule(tenant(org), 'binary.org');
  const id = newUserId();
  await produce(activatedTopic, [binary(cloudEvent(TYPES.activated, userData(org, { id, email: email('ivy', 'binary.org') })), id)]);
  expect(await waitFor(() => membershipIn(org, id))).toMatchObject({ group: group.id, automatic: true });
});

test('invalid messages go to <topic>.dlq unchanged with the reason, unknown types are skipped, and the next valid message of the partition is applied', async () => {
  const org = uniqueName('org');
  await seedRule(tenant(org), 'dlq.org');
  const id = newUserId();
  const key = String(id);
  const badData = userData(org, { id, email: email('jo', 'dlq.org') }) as { user: Record<string, unknown> };
  delete badData.user.id;
  const poison = [
    { key, value: '{"this is": not json' },
    { key, value: JSON.stringify({ hello: 'not a cloud event' }) },
    structured(cloudEvent(TYPES.activated, badData), key),
  ];
  const sent = [];
  for (const message of poison) sent.push(await produceOne(activatedTopic, { ...message, partition: 0 }));
  await produceOne(activatedTopic, { ...structured(cloudEvent('com.example.something.else.v1', { x: 1 }), key), partition: 0 });
  await produceOne(activatedTopic, { ...structured(cloudEvent(TYPES.activated, userData(org, { id, email: email('jo', 'dlq.org') })), key), partition: 0 });

  expect(await waitFor(() => membershipIn(org, id))).toMatchObject({ automatic: true });
  const dead = await readTopic(dlqTopic(activatedTopic), 3);
  const header = (m: (typeof dead)[number], name: string) => m.headers?.[name]?.toString();
  expect(dead.map((m) => header(m, 'x-original-offset')).sort()).toEqual(sent.map((s) => String(s.offset)).sort());
  for (const [i, m] of dead.entries()) {
    expect(m.key?.toString()).toBe(key);
    expect(m.value?.toString()).toBe(poison[sent.findIndex((s) => String(s.offset) === header(m, 'x-original-offset'))]!.value);
    expect(header(m, 'x-original-topic')).toBe(activatedTopic);
    expect(header(m, 'x-original-partition')).toBe('0');
    expect(header(dead[i]!, 'x-dlq-reason')).toBeTruthy();
  }
  const reasons = dead.map((m) => header(m, 'x-dlq-reason'));
  expect(reasons).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/not JSON/),
      expect.stringMatching(/not a CloudEvent/),
      expect.stringMatching(/data does not match.*\/user.*id/),
    ]),
  );
});

test('no log line carries an email, while the consumer did log the events it handled', () => {
  const text = service.logs.join('');
  expect(text).toMatch(/"msg":"event handled"/);
  expect(text).toMatch(/"msg":"invalid message; copied to the dead-letter topic and skipped"/);
  for (const address of emails) expect(text).not.toContain(address);
  expect(text).not.toMatch(/[\w.+-]+@[\w-]+\.[\w.]+/);
});
