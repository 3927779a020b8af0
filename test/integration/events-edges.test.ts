// Issue 38: the holes SPEC §5 still had, as regression tests through the real consumer on the
// local stack. Each test sends to one partition no other test uses, so its messages arrive in the
// order sent. Times at the edges: "a leap second is the last instant of its minute, times compare
// as instants whatever their offset, and a valid time the service cannot represent goes to the
// DLQ with its reason, never misordered".
import { dlqTopic } from '../../consumers/consumer';
import { COLLECTIONS, type CourseDoc, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import {
  closeProducer,
  cloudEvent,
  type EventTestService,
  newUserId,
  orgWithRule,
  produceOne,
  readTopic,
  startEventService,
  storedActive,
  structured,
  TYPES,
  userData,
  waitCommitted,
} from '../helpers/events';

let service: EventTestService;

beforeAll(async () => {
  service = await startEventService();
}, 60000);
afterAll(async () => {
  await closeProducer();
  await service.close();
});

const topicOf = (i: 0 | 1 | 2) => service.config.KAFKA_TOPICS[i]!;
const sender = (topic: string, partition: number) => (message: ReturnType<typeof structured>) => produceOne(topic, { ...message, partition });
const handled = (at: { topic: string; partition: number; offset: number }) => waitCommitted(service.config.KAFKA_GROUP_ID, at);

test('a leap second is the last instant of its minute: the activation at 23:59:60Z applies, an update within that second before it is stale, the next second is newer', async () => {
  const send = sender(topicOf(0), 0);
  const { org, api, group } = await orgWithRule(service, 'leap.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@leap.edu` };
  await send(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true, name: 'Leap' }), { time: '2016-12-31T23:59:60Z' }), id));
  // The same instant in another offset's clock: the last instant of 18:59 at -05:00.
  await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: true, name: 'Before' }), { time: '2016-12-31T23:59:59.5Z' }), id));
  await handled(
    await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: true, name: 'Late' }), { time: '2016-12-31T18:59:59.9-05:00' }), id)),
  );
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'Leap', membership: { group: { id: group.id } } });

  await handled(
    await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: true, name: 'After' }), { time: '2017-01-01T00:00:00Z' }), id)),
  );
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'After' });
}, 60000);

test.each([
  ['a UTC instant in year 10000', '9999-12-31T23:00:00-05:00', /years 0000 to 9999/],
  ['a fraction finer than nanoseconds', '2026-05-20T00:00:00.0000000001Z', /finer than nanoseconds/],
] as const)(
  "a retirement at %s goes to the DLQ with its reason, and today's events order as before",
  async (_name, time, reason) => {
    // Partition 1, then 2: the DLQ holds one copy per test run so far.
    const partition = time.startsWith('9999') ? 1 : 2;
    const send = sender(topicOf(1), partition);
    const { org, api, group } = await orgWithRule(service, `edge-${partition}.edu`);
    const id = newUserId();
    const user = { id, email: `learner${id}@edge-${partition}.edu` };
    const retirement = await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time }), id));
    await handled(await send(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time: '2026-05-20T00:00:00Z' }), id)));

    const dead = (await readTopic(dlqTopic(topicOf(1)), partition)).filter(
      (m) =>
        m.headers?.['x-original-offset']?.toString() === String(retirement.offset) && m.headers?.['x-original-partition']?.toString() === String(partition),
    );
    expect(dead).toHaveLength(1);
    expect(dead[0]!.headers?.['x-dlq-reason']?.toString()).toMatch(reason);
    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
    expect(await storedActive(service, org, id)).toBe(true);
  },
  60000,
);

// Item 1: a redelivery of an event that shares its time with another, after the record moved on,
// is the same event (its activation log entry names it), not a late event placed after the others.
test("a registration (inactive) and an activation of one time, an administrator's removal, a later login, then the registration again: the removal stands", async () => {
  const send = sender(topicOf(2), 0);
  const { org, api } = await orgWithRule(service, 'tied-redelivery.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@tied-redelivery.edu` };
  const time = '2026-05-21T00:00:05Z';
  const registration = structured(cloudEvent(TYPES.registered, userData(org, { ...user, is_active: false }), { time }), id);
  await send(registration);
  await handled(await send(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time }), id)));
  const member = (await api.get(`users/${id}/`)).body.membership;
  expect(member).not.toBeNull();
  expect((await api.delete(`memberships/${member.id}/`)).status).toBe(204);
  await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time: '2026-05-21T00:00:06Z' }), id));
  await handled(await send(registration));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });
  expect(await storedActive(service, org, id)).toBe(true);
}, 60000);

test('a login and a deactivation of one time, a removal, a later login that makes a new membership, then the first login again: the new membership stays', async () => {
  const send = sender(topicOf(2), 1);
  const { org, api, group } = await orgWithRule(service, 'tied-login.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@tied-login.edu` };
  const time = '2026-05-22T00:00:05Z';
  const login = structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time }), id);
  await send(login);
  await handled(await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false }), { time }), id)));
  const member = (await api.get(`users/${id}/`)).body.membership;
  expect(member).not.toBeNull();
  expect((await api.delete(`memberships/${member.id}/`)).status).toBe(204);
  await handled(await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time: '2026-05-22T00:00:07Z' }), id)));
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
  await handled(await send(login));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
}, 60000);

// Found by a long run of the event-history model (seed 677432192): an administrator's move is a
// change made where the record stood then, so a retirement older than it (arriving later) takes
// the membership only in its place, before the activation that brought the learner back.
test('an activation of 8, one of 7 arriving later, an administrator’s move, then a retirement of 7: the moved membership stays', async () => {
  const send = sender(topicOf(0), 1);
  const { org, api, group } = await orgWithRule(service, 'moved-then-retired.edu');
  const other = (await api.post('course-access-groups/', { name: 'moved here', description: '' })).body as { id: number };
  const id = newUserId();
  const user = { id, email: `learner${id}@moved-then-retired.edu`, is_active: true };
  const at7 = { time: '2026-05-28T00:00:07Z' };
  await handled(await send(structured(cloudEvent(TYPES.activated, userData(org, user), { time: '2026-05-28T00:00:08Z' }), id)));
  await handled(await send(structured(cloudEvent(TYPES.activated, userData(org, user), at7), id)));
  const member = (await api.get(`users/${id}/`)).body.membership;
  expect(member).toMatchObject({ group: { id: group.id } });
  expect((await api.patch(`memberships/${member.id}/`, { group: other.id })).status).toBe(200);
  await handled(await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, at7), id)));

  // In event time: activated at 7, retired at 7, back at 8 (the rule's group), then moved.
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: other.id } } });
}, 60000);

// Item 2: a deletion of the same time as events the record applied, arriving after a newer event,
// comes after those of its time (the tie rule), as it would have had it arrived in its place.
test.each([
  ['in its place (before the newer login)', 0],
  ['late (after the newer login)', 1],
] as const)(
  "a retirement of the activation's time arriving %s takes the membership the administrator moved; the newer login's rule applies",
  async (_name, partition) => {
    const send = sender(topicOf(0), partition === 0 ? 1 : 2);
    const domain = `tied-retirement-${partition}.edu`;
    const { org, api, group } = await orgWithRule(service, domain);
    const other = (await api.post('course-access-groups/', { name: 'moved here', description: '' })).body as { id: number };
    const id = newUserId();
    const user = { id, email: `learner${id}@${domain}`, is_active: true };
    const time = '2026-05-23T00:00:05Z';
    await handled(await send(structured(cloudEvent(TYPES.activated, userData(org, user), { time }), id)));
    const member = (await api.get(`users/${id}/`)).body.membership;
    expect((await api.patch(`memberships/${member.id}/`, { group: other.id })).status).toBe(200);
    const retirement = structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time }), id);
    const login = structured(cloudEvent(TYPES.login, userData(org, user), { time: '2026-05-23T00:00:06Z' }), id);
    for (const message of partition === 0 ? [retirement, login] : [login, retirement]) await handled(await send(message));

    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
  },
  60000,
);

test("a course deletion of its creation's time arriving after a newer catalog change takes the links made before it, as it would in its place", async () => {
  const send = sender(topicOf(2), 2);
  const { org, api } = await orgWithRule(service, 'tied-course.edu');
  const group = (await api.post('course-access-groups/', { name: 'linked', description: '' })).body as { id: number };
  const key = `course-v1:TIED+C1+${newUserId()}`;
  const time = '2026-05-24T00:00:05Z';
  const catalog = (name: string, at: string) =>
    structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, { time: at }), key);
  await handled(await send(catalog('Tied', time)));
  expect((await api.post('group-courses/', { course: key, group: group.id })).status).toBe(201);
  await send(catalog('Renamed', '2026-05-24T00:00:06Z'));
  await handled(await send(structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time }), key)));

  expect((await api.get(`group-courses/?course=${encodeURIComponent(key)}`)).body.results).toEqual([]);
}, 60000);

// Item 5: an event without `time` is ordered by its earliest Kafka timestamp known, whichever of
// its records is read first. The same event on two topics with different timestamps, and an
// event of the same record whose time falls between them, read in both orders, end alike.
const untimed = (event: ReturnType<typeof cloudEvent>) => {
  const { time: _time, ...rest } = event;
  return rest as ReturnType<typeof cloudEvent>;
};
const at = (iso: string) => String(Date.parse(iso));
/** `event` as a Kafka record stamped at `iso` (an event without `time` takes it). */
const stampedAt = (event: ReturnType<typeof cloudEvent>, key: string | number, iso: string) => ({ ...structured(event, key), timestamp: at(iso) });
/** The course `key` as organization `org` holds it (null: not there). */
const courseIn = (org: string, key: string) => new Tenant(service.db, org).collection<CourseDoc>(COLLECTIONS.courses).findById(key);

test.each([
  ['the earlier copy first', true],
  ['the later copy first', false],
] as const)(
  'a registration without time on two topics (Kafka timestamps 1 s and 3 s) and a deactivation of 2 s read between them, %s: the deactivation is newer',
  async (_name, earlierFirst) => {
    const { org, api, group } = await orgWithRule(service, 'untimed.edu');
    const id = newUserId();
    const user = { id, email: `learner${id}@untimed.edu` };
    const registration = untimed(cloudEvent(TYPES.registered, userData(org, { ...user, is_active: true, name: 'Copy' })));
    const early = stampedAt(registration, id, '2026-06-01T00:00:01Z');
    const late = stampedAt(registration, id, '2026-06-01T00:00:03Z');
    const [first, second] = earlierFirst ? [early, late] : [late, early];
    const deactivation = structured(
      cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false, name: 'Between' }), { time: '2026-06-01T00:00:02Z' }),
      id,
    );
    await handled(await sender(topicOf(0), 0)(first));
    await handled(await sender(topicOf(1), 0)(deactivation));
    await handled(await sender(topicOf(1), 0)(second));

    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'Between', membership: { group: { id: group.id } } });
    expect(await storedActive(service, org, id)).toBe(false);
  },
  60000,
);

test.each([
  ['the earlier copy first, a change between', true, false],
  ['the later copy first, a change between', false, false],
  ['the earlier copy first, a deletion between', true, true],
  ['the later copy first, a deletion between', false, true],
] as const)(
  'a catalog change without time on two topics and an event timed between them, %s: the timed event is newer',
  async (_name, earlierFirst, deletion) => {
    const { org } = await orgWithRule(service, `untimed-course-${earlierFirst}-${deletion}.edu`);
    const key = `course-v1:UNTIMED+C1+${newUserId()}`;
    const catalog = (name: string, time?: string) =>
      cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, time === undefined ? {} : { time });
    const copy = untimed(catalog('Copy'));
    const early = stampedAt(copy, key, '2026-06-02T00:00:01Z');
    const late = stampedAt(copy, key, '2026-06-02T00:00:03Z');
    const [first, second] = earlierFirst ? [early, late] : [late, early];
    await handled(await sender(topicOf(0), 0)(first));
    const between = deletion
      ? cloudEvent(TYPES.courseDeleted, { course_key: key }, { time: '2026-06-02T00:00:02Z' })
      : catalog('Between', '2026-06-02T00:00:02Z');
    await handled(await sender(topicOf(1), 0)(structured(between, key)));
    await handled(await sender(topicOf(1), 0)(second));

    const course = await courseIn(org, key);
    expect(course?.name ?? 'deleted').toBe(deletion ? 'deleted' : 'Between');
  },
  60000,
);

test.each([
  ['the earlier copy first', true],
  ['the later copy first', false],
] as const)(
  "an activation, the administrator's removal, a deactivation without time on two topics (1 s and 3 s) and an activation of 2 s read between them, %s: the activation of 2 s starts a period and applies its rule",
  async (_name, earlierFirst) => {
    const { org, api, group } = await orgWithRule(service, 'untimed-period.edu');
    const id = newUserId();
    const user = { id, email: `learner${id}@untimed-period.edu` };
    await handled(
      await sender(topicOf(0), 0)(structured(cloudEvent(TYPES.activated, userData(org, { ...user, is_active: true }), { time: '2026-06-03T00:00:00Z' }), id)),
    );
    const member = (await api.get(`users/${id}/`)).body.membership;
    expect((await api.delete(`memberships/${member.id}/`)).status).toBe(204);
    const deactivation = untimed(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false })));
    const early = stampedAt(deactivation, id, '2026-06-03T00:00:01Z');
    const late = stampedAt(deactivation, id, '2026-06-03T00:00:03Z');
    const [first, second] = earlierFirst ? [early, late] : [late, early];
    await handled(await sender(topicOf(0), 0)(first));
    await handled(
      await sender(topicOf(1), 0)(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time: '2026-06-03T00:00:02Z' }), id)),
    );
    await handled(await sender(topicOf(1), 0)(second));

    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
    expect(await storedActive(service, org, id)).toBe(true);
  },
  60000,
);

/** Learner `id`'s events, showing them active: of `type`, in `organization`, with an email of `domain`, at `time`. */
const activeEvent = (id: number) => (type: string, organization: string, domain: string, time: string) =>
  structured(cloudEvent(type, userData(organization, { id, email: `learner${id}@${domain}`, is_active: true }), { time }), id);

// The tie rule for an event older than the record: a login of time 5 arriving after the record
// moved past 5 comes after every event of time 5 that arrived before it (here the activation of
// time 5 that moved the learner away), as it would had it arrived before the newer activation.
// Found by the event-history model (seed 2911): `time#0` placed it before them, and the removal
// that move left refused it.
test.each([
  ['before the newer activation', true],
  ['after the newer activation', false],
] as const)(
  "an activation of time 5 elsewhere, then a login of time 5 back here read %s of time 13: the login's rule owns the membership",
  async (_name, loginFirst) => {
    const send = sender(topicOf(1), 1);
    const { org, api, group } = await orgWithRule(service, `tied-move-${loginFirst}.edu`);
    const later = (await api.post('course-access-groups/', { name: 'later', description: '' })).body as { id: number };
    expect((await api.post('membership-rules/', { name: 'later', domain: `later-${loginFirst}.edu`, group: later.id })).status).toBe(201);
    const { org: elsewhere } = await orgWithRule(service, `tied-move-elsewhere-${loginFirst}.edu`);
    const id = newUserId();
    const event = activeEvent(id);
    await handled(await send(event(TYPES.activated, elsewhere, `tied-move-${loginFirst}.edu`, '2026-05-25T00:00:05Z')));
    const login = event(TYPES.login, org, `tied-move-${loginFirst}.edu`, '2026-05-25T00:00:05Z');
    const newer = event(TYPES.activated, org, `later-${loginFirst}.edu`, '2026-05-25T00:00:13Z');
    for (const message of loginFirst ? [login, newer] : [newer, login]) await handled(await send(message));

    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, email: `learner${id}@later-${loginFirst}.edu`, membership: { group: { id: group.id } } });
  },
  60000,
);

// A move older than the record (an activation elsewhere, of a time the record has passed) is
// placed as late too: after the login of its time that arrived before it, so it takes it.
test.each([
  ['before the newer registration', true],
  ['after the newer registration', false],
] as const)(
  "a login of time 9 here, then an activation of time 9 elsewhere read %s of time 11 back here: the registration's rule owns the membership",
  async (_name, moveFirst) => {
    const send = sender(topicOf(2), 1);
    const { org, api, group } = await orgWithRule(service, `late-move-${moveFirst}.edu`);
    const { org: elsewhere } = await orgWithRule(service, `late-move-elsewhere-${moveFirst}.edu`);
    const id = newUserId();
    const event = activeEvent(id);
    await handled(await send(event(TYPES.login, org, 'no-rule.example', '2026-05-26T00:00:09Z')));
    const move = event(TYPES.activated, elsewhere, 'no-rule.example', '2026-05-26T00:00:09Z');
    const registration = event(TYPES.registered, org, `late-move-${moveFirst}.edu`, '2026-05-26T00:00:11Z');
    for (const message of moveFirst ? [move, registration] : [registration, move]) await handled(await send(message));

    expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
  },
  60000,
);

// Late removals name the events they come after (`removed_i`): a redelivery of a login a late
// retirement took stays taken, and a redelivery of the retirement takes nothing that arrived after it.
test("a login and a retirement of time 10 arriving after an update of 20, the login again, a registration of 10, the retirement again: the registration's membership stays", async () => {
  const send = sender(topicOf(0), 2);
  const { org, api, group } = await orgWithRule(service, 'late-retirement.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@late-retirement.edu`, is_active: true };
  const at10 = { time: '2026-05-27T00:00:10Z' };
  await handled(await send(structured(cloudEvent(TYPES.updated, userData(org, user), { time: '2026-05-27T00:00:20Z' }), id)));
  const login = structured(cloudEvent(TYPES.login, userData(org, user), at10), id);
  const retirement = structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, at10), id);
  await handled(await send(login));
  expect((await api.get(`users/${id}/`)).body.membership).toMatchObject({ group: { id: group.id } });
  await handled(await send(retirement));
  expect((await api.get(`users/${id}/`)).body.membership).toBeNull();
  await handled(await send(login));
  expect((await api.get(`users/${id}/`)).body.membership).toBeNull();
  await handled(await send(structured(cloudEvent(TYPES.registered, userData(org, user), at10), id)));
  expect((await api.get(`users/${id}/`)).body.membership).toMatchObject({ group: { id: group.id } });
  await handled(await send(retirement));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
}, 60000);

// A catalog change without time that applied at the time of the course's newest event (a tie),
// then moved back before a deletion by its earlier record: the deletion is in the course's past,
// and the events kept after it create the course again, as in event time.
test.each([
  ['the deletion the course was created again after (its tombstone names it)', true],
  ['a deletion refused meanwhile, older than the event the change overwrote', false],
] as const)(
  'a catalog change without time moved back before %s: the newer event it overwrote stands',
  async (_name, deletedFirst) => {
    const { org } = await orgWithRule(service, `untimed-recreated-${deletedFirst}.edu`);
    const key = `course-v1:UNTIMED+C2+${newUserId()}`;
    const catalog = (name: string, time?: string) =>
      cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, time === undefined ? {} : { time });
    const deletion = structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time: '2026-06-04T00:00:04Z' }), key);
    const send = sender(topicOf(2), 0);
    if (deletedFirst) {
      await handled(await send(structured(catalog('Created', '2026-06-04T00:00:04Z'), key)));
      await handled(await send(deletion));
    }
    await handled(await send(structured(catalog('Newer', '2026-06-04T00:00:05Z'), key)));
    const copy = untimed(catalog('Copy'));
    const late = stampedAt(copy, key, '2026-06-04T00:00:05Z');
    const early = stampedAt(copy, key, '2026-06-04T00:00:03Z');
    await handled(await send(late));
    await handled(await send(deletedFirst ? structured(catalog('Older', '2026-06-04T00:00:04Z'), key) : deletion));
    await handled(await sender(topicOf(0), 0)(early));

    const course = await courseIn(org, key);
    expect(course?.name ?? 'deleted').toBe('Newer');
  },
  60000,
);

// A learner's event kept beside an update without time (stale then) becomes the record again when
// that update moves back below it: its late log entry takes the record's version, so what it made
// is the record's (a retirement takes it) and the events of its time that follow come after it.
// Found by the 200-history model run: the membership outlived the retirement.
test('an update without time, a login of an earlier time (its rule makes a membership), the update moved back before the login, a deactivation of the login’s time, a retirement: no membership is left', async () => {
  const { org, api } = await orgWithRule(service, 'untimed-late-entry.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@untimed-late-entry.edu` };
  const update = untimed(cloudEvent(TYPES.updated, userData(org, { ...user, is_active: false, name: 'Untimed' })));
  const first = stampedAt(update, id, '2026-06-05T00:00:06Z');
  const earlier = stampedAt(update, id, '2026-06-05T00:00:04Z');
  const send = sender(topicOf(1), 2);
  await handled(await send(first));
  await handled(await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: true }), { time: '2026-06-05T00:00:05Z' }), id)));
  expect((await api.get(`users/${id}/`)).body.membership).not.toBeNull();
  await handled(await sender(topicOf(0), 2)(earlier));
  await handled(await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, is_active: false }), { time: '2026-06-05T00:00:05Z' }), id)));
  await handled(await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-06-05T00:00:08Z' }), id)));

  expect((await api.get(`users/${id}/`)).status).toBe(404);
  expect((await api.get(`memberships/?user=${id}`)).body.results).toEqual([]);
}, 60000);

test('a catalog change without time, then a deletion and a catalog change of one earlier time (the course deleted and created again), the change moved back before both: the course stands, and a redelivered deletion changes nothing', async () => {
  const { org } = await orgWithRule(service, 'untimed-tie-recreated.edu');
  const key = `course-v1:UNTIMED+C3+${newUserId()}`;
  const catalog = (name: string, time?: string) =>
    cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, time === undefined ? {} : { time });
  const copy = untimed(catalog('Copy'));
  const late = stampedAt(copy, key, '2026-06-06T00:00:05Z');
  const early = stampedAt(copy, key, '2026-06-06T00:00:03Z');
  const deletion = structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time: '2026-06-06T00:00:04Z' }), key);
  const send = sender(topicOf(2), 1);
  await handled(await send(late));
  await handled(await send(deletion));
  await handled(await send(structured(catalog('Again', '2026-06-06T00:00:04Z'), key)));
  await handled(await sender(topicOf(0), 1)(early));
  const course = () => courseIn(org, key);
  expect((await course())?.name ?? 'deleted').toBe('Again');
  await handled(await send(deletion));
  expect((await course())?.name ?? 'deleted').toBe('Again');
}, 60000);

// A change kept beside an event without time that named another organization (the record moved
// there after, in event time) is applied again once that event moves back below it: the record
// ends where event time puts it. Found by the 200-history model run (history 146).
test('a catalog change of organization A, a change without time naming B just after it, an older change naming B, then the earlier record of the change without time: the course is back in A', async () => {
  const { org: a } = await orgWithRule(service, 'untimed-move-a.edu');
  const { org: b } = await orgWithRule(service, 'untimed-move-b.edu');
  const key = `course-v1:UNTIMED+C4+${newUserId()}`;
  const catalog = (org: string, name: string, time?: string) =>
    cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, time === undefined ? {} : { time });
  const copy = untimed(catalog(b, 'Copy'));
  const late = stampedAt(copy, key, '2026-06-07T00:00:05Z');
  const early = stampedAt(copy, key, '2026-06-07T00:00:02Z');
  const send = sender(topicOf(2), 2);
  await handled(await send(structured(catalog(a, 'In A', '2026-06-07T00:00:04Z'), key)));
  await handled(await send(late));
  await handled(await send(structured(catalog(b, 'Older in B', '2026-06-07T00:00:03Z'), key)));
  await handled(await sender(topicOf(0), 2)(early));

  const course = (org: string) => courseIn(org, key);
  expect({ a: (await course(a))?.name ?? null, b: (await course(b))?.name ?? null }).toEqual({ a: 'In A', b: null });
}, 60000);

test('a login in organization A, an update without time naming B just after it, an older login naming B, then the earlier record of the update: the learner is back in A, with the rule’s membership', async () => {
  const { org: a, api, group } = await orgWithRule(service, 'untimed-user-move-a.edu');
  const { org: b } = await orgWithRule(service, 'untimed-user-move-b.edu');
  const id = newUserId();
  const user = (org: string, name: string) => userData(org, { id, email: `learner${id}@untimed-user-move-a.edu`, is_active: true, name });
  const update = untimed(cloudEvent(TYPES.updated, user(b, 'Copy')));
  const late = stampedAt(update, id, '2026-06-08T00:00:05Z');
  const early = stampedAt(update, id, '2026-06-08T00:00:02Z');
  const send = sender(topicOf(1), 2);
  await handled(await send(structured(cloudEvent(TYPES.login, user(a, 'In A'), { time: '2026-06-08T00:00:04Z' }), id)));
  await handled(await send(late));
  await handled(await send(structured(cloudEvent(TYPES.login, user(b, 'Older in B'), { time: '2026-06-08T00:00:03Z' }), id)));
  await handled(await sender(topicOf(0), 2)(early));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'In A', membership: { group: { id: group.id } } });
}, 60000);

// A deletion, then a catalog change without time that created the course again after its
// tombstone, a change of the deletion's time (stale then, kept beside it), and the change without
// time moved back before the deletion: the deletion and the change of its time follow it, in the
// order they arrived, so the change of the deletion's time stands. Found by CI's model run
// (seed 2144763324): the course stayed deleted.
test('a deletion, a catalog change without time after it, a change of the deletion’s time, then the change without time moved back before the deletion: the change of the deletion’s time stands', async () => {
  const { org } = await orgWithRule(service, 'untimed-after-tombstone.edu');
  const key = `course-v1:UNTIMED+C5+${newUserId()}`;
  const catalog = (name: string, time?: string) =>
    cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, time === undefined ? {} : { time });
  const copy = untimed(catalog('Copy'));
  const late = stampedAt(copy, key, '2026-06-09T00:00:06Z');
  const early = stampedAt(copy, key, '2026-06-09T00:00:04Z');
  const send = sender(topicOf(2), 0);
  await handled(await send(structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time: '2026-06-09T00:00:05Z' }), key)));
  await handled(await send(late));
  await handled(await send(structured(catalog('Between', '2026-06-09T00:00:05Z'), key)));
  const course = () => courseIn(org, key);
  expect((await course())?.name ?? 'deleted').toBe('Copy');
  await handled(await sender(topicOf(0), 0)(early));

  expect((await course())?.name ?? 'deleted').toBe('Between');
}, 60000);

test('a retirement, an update without time after it, a login of the retirement’s time, then the update moved back before the retirement: the learner of the login stands, with the rule’s membership', async () => {
  const { org, api, group } = await orgWithRule(service, 'untimed-after-retirement.edu');
  const id = newUserId();
  const user = (name: string) => userData(org, { id, email: `learner${id}@untimed-after-retirement.edu`, is_active: true, name });
  const update = untimed(cloudEvent(TYPES.updated, user('Copy')));
  const late = stampedAt(update, id, '2026-06-10T00:00:06Z');
  const early = stampedAt(update, id, '2026-06-10T00:00:04Z');
  const send = sender(topicOf(1), 0);
  await handled(await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-06-10T00:00:05Z' }), id)));
  await handled(await send(late));
  await handled(await send(structured(cloudEvent(TYPES.login, user('Between'), { time: '2026-06-10T00:00:05Z' }), id)));
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'Copy' });
  await handled(await sender(topicOf(0), 0)(early));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'Between', membership: { group: { id: group.id } } });
}, 60000);

// An activation without time read first at its later record (a newer event than the retirement
// then: it made the learner again after the tombstone), then its earlier record, older than the
// retirement: in event time the retirement came after it and takes the learner. One after the
// other, as here, the earlier record's own write finishes the retirement; two processes reading
// the two records at once left the learner (seed 496607489, history 3: events-concurrency.test.ts).
test('an update of 3, a retirement of 4, an activation without time stamped 5, then the activation stamped 3: the learner is retired', async () => {
  const { org, api } = await orgWithRule(service, 'untimed-below-tombstone.edu');
  const id = newUserId();
  const user = (name: string, is_active: boolean) => userData(org, { id, email: `learner${id}@untimed-below-tombstone.edu`, is_active, name });
  const activation = untimed(cloudEvent(TYPES.activated, user('Twin', false)));
  const send = sender(topicOf(1), 1);
  await handled(await send(structured(cloudEvent(TYPES.updated, user('Cy', true), { time: '2026-06-15T00:00:03Z' }), id)));
  await handled(await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-06-15T00:00:04Z' }), id)));
  await handled(await sender(topicOf(0), 1)(stampedAt(activation, id, '2026-06-15T00:00:05Z')));
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'Twin' });
  await handled(await send(stampedAt(activation, id, '2026-06-15T00:00:03Z')));

  expect((await api.get(`users/${id}/`)).status).toBe(404);
  expect((await api.get(`memberships/?user=${id}`)).body.results).toEqual([]);
}, 60000);

// An activation without time, applied after a retirement (a newer event then: it made the
// learner again, and its rule a membership), moves back below that retirement: in event time the
// retirement takes the learner and the membership, and the registration after it makes the
// learner anew. Found by an exploring model run (seed 1795778687, history 45).
test('a retirement of 11, an activation without time stamped 12 (its rule makes a membership), a registration of 12, then the activation stamped 10: no membership is left', async () => {
  const { org, api } = await orgWithRule(service, 'untimed-below-retirement.edu');
  const id = newUserId();
  const user = (email: string, name: string) => userData(org, { id, email, is_active: true, name });
  const activation = untimed(cloudEvent(TYPES.activated, user(`learner${id}@untimed-below-retirement.edu`, 'Twin')));
  const late = stampedAt(activation, id, '2026-06-11T00:00:12Z');
  const early = stampedAt(activation, id, '2026-06-11T00:00:10Z');
  const send = sender(topicOf(1), 1);
  await handled(await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-06-11T00:00:11Z' }), id)));
  await handled(await sender(topicOf(0), 1)(late));
  expect((await api.get(`users/${id}/`)).body.membership).not.toBeNull();
  await handled(await send(structured(cloudEvent(TYPES.registered, user(`learner${id}@elsewhere.com`, 'Racer'), { time: '2026-06-11T00:00:12Z' }), id)));
  await handled(await send(early));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'Racer', membership: null });
  expect((await api.get(`memberships/?user=${id}`)).body.results).toEqual([]);
}, 60000);

// Kept beside a login without time: a retirement of an earlier time and a login of that time
// naming another organization. The login without time moved back below both: they apply again in
// the order they arrived, so the learner is retired, then comes back in the other organization.
// Found by an exploring model run (seed 1795779816, history 3).
test('a login without time stamped 3 in B, a retirement of 2, a login of 2 in A, then the login without time stamped 1: the learner is in A, with its rule’s membership', async () => {
  const { org: a, api, group } = await orgWithRule(service, 'untimed-retired-a.edu');
  const { org: b } = await orgWithRule(service, 'untimed-retired-b.edu');
  const id = newUserId();
  const login = untimed(cloudEvent(TYPES.login, userData(b, { id, email: `learner${id}@untimed-retired-b.edu`, is_active: true, name: 'Twin' })));
  const late = stampedAt(login, id, '2026-06-12T00:00:03Z');
  const early = stampedAt(login, id, '2026-06-12T00:00:01Z');
  const send = sender(topicOf(1), 2);
  await handled(await send(late));
  await handled(await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: b }, { time: '2026-06-12T00:00:02Z' }), id)));
  const inA = userData(a, { id, email: `learner${id}@untimed-retired-a.edu`, is_active: true, name: 'In A' });
  await handled(await send(structured(cloudEvent(TYPES.login, inA, { time: '2026-06-12T00:00:02Z' }), id)));
  await handled(await sender(topicOf(0), 2)(early));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, name: 'In A', membership: { group: { id: group.id } } });
}, 60000);

test('a catalog change without time stamped 5 in B, a deletion of 4, a change of 4 in A, then the change without time stamped 3: the course is in A', async () => {
  const { org: a } = await orgWithRule(service, 'untimed-deleted-a.edu');
  const { org: b } = await orgWithRule(service, 'untimed-deleted-b.edu');
  const key = `course-v1:UNTIMED+C6+${newUserId()}`;
  const catalog = (org: string, name: string, time?: string) =>
    cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, time === undefined ? {} : { time });
  const copy = untimed(catalog(b, 'Copy'));
  const late = stampedAt(copy, key, '2026-06-13T00:00:05Z');
  const early = stampedAt(copy, key, '2026-06-13T00:00:03Z');
  const send = sender(topicOf(2), 2);
  await handled(await send(late));
  await handled(await send(structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time: '2026-06-13T00:00:04Z' }), key)));
  await handled(await send(structured(catalog(a, 'In A', '2026-06-13T00:00:04Z'), key)));
  await handled(await sender(topicOf(0), 2)(early));

  const course = (org: string) => courseIn(org, key);
  expect({ a: (await course(a))?.name ?? null, b: (await course(b))?.name ?? null }).toEqual({ a: 'In A', b: null });
}, 60000);

// An activation without time moved the learner here from C after a timed event of C of its time;
// a login here of an earlier time was kept beside it. The activation moved back below both: the
// kept events apply again in order, the login first, while the record still names the move from
// C as its removal (newer than the login). The login's entry then lay below that removal: the
// membership plan asked for its rule's membership and for the deletion of a membership begun
// before the removal, round after round, until the event went to the DLQ. Found by an exploring
// model run (seed 1795781132, history 100).
test('an update of 4 in C, an activation without time stamped 4 here, a login of 3 here, then the activation stamped 2: the learner ends in C, the event applied once', async () => {
  const { org: a, api } = await orgWithRule(service, 'untimed-below-move-a.edu');
  const { org: c } = await orgWithRule(service, 'untimed-below-move-c.edu');
  const id = newUserId();
  const user = (org: string, name: string, is_active: boolean) => userData(org, { id, email: `learner${id}@untimed-below-move-a.edu`, is_active, name });
  const activation = untimed(cloudEvent(TYPES.activated, user(a, 'Twin', true)));
  const late = stampedAt(activation, id, '2026-06-14T00:00:04Z');
  const early = stampedAt(activation, id, '2026-06-14T00:00:02Z');
  const send = sender(topicOf(1), 0);
  await handled(await send(structured(cloudEvent(TYPES.updated, user(c, 'In C', false), { time: '2026-06-14T00:00:04Z' }), id)));
  await handled(await sender(topicOf(0), 0)(late));
  await handled(await send(structured(cloudEvent(TYPES.login, user(a, 'Between', true), { time: '2026-06-14T00:00:03Z' }), id)));
  await handled(await send(early));

  expect((await api.get(`users/${id}/`)).status).toBe(404);
  const inC = await new Tenant(service.db, c).collection<UserDoc>(COLLECTIONS.users).findById(String(id));
  expect({ name: inC?.name, active: inC?.is_active }).toEqual({ name: 'In C', active: false });
  expect((await api.get(`memberships/?user=${id}`)).body.results).toEqual([]);
}, 60000);

// Found by a black-box attack (round 2): an event without time whose earlier Kafka record comes
// after something hung on the course at its later place. The course leaves the organization at a
// place below the children made while it stood there: they go all the same (by arrival, not by
// place), in both arrival orders.
test.each([
  ['a deletion', (org: string, key: string) => cloudEvent(TYPES.courseDeleted, { course_key: key, organization: org }, { time: '2026-06-12T00:00:15Z' })],
  [
    'a catalog change naming another organization',
    (org: string, key: string) =>
      cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name: 'In B' }, organization: `${org}-b` }, { time: '2026-06-12T00:00:15Z' }),
  ],
])(
  'a catalog change without time stamped 20, a link and a public record, %s of 15, then the change stamped 10: nothing stays in the organization',
  async (_name, leave) => {
    const { org, api, group } = await orgWithRule(service, 'untimed-children.edu');
    const key = `course-v1:UNTIMED+K${newUserId()}+R`;
    const change = untimed(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name: 'Here' }, organization: org }));
    const send = sender(topicOf(2), 2);
    await handled(await send(stampedAt(change, key, '2026-06-12T00:00:20Z')));
    expect((await api.post('group-courses/', { course: key, group: group.id })).status).toBe(201);
    expect((await api.post('public-courses/', { course: key })).status).toBe(201);
    await handled(await send(structured(leave(org, key), key)));
    expect((await courseIn(org, key))?.name).toBe('Here'); // the leave at 15, the change at 20: still here
    await handled(await send(stampedAt(change, key, '2026-06-12T00:00:10Z')));

    // In event time: the change at 10, the leave at 15.
    expect(await courseIn(org, key)).toBeNull();
    expect({ links: (await api.get('group-courses/')).body.count, publics: (await api.get('public-courses/')).body.count }).toEqual({ links: 0, publics: 0 });
  },
  60000,
);

// The same attack: a reset without time folded what came before it away, so when its earlier
// Kafka record moved it below them, they were lost. Only a reset with time is a floor now.
test('an activation of 10, a retirement without time stamped 20, an update of 30, then the retirement stamped 5: the learner stands with the activation’s membership', async () => {
  const { org, api, group } = await orgWithRule(service, 'untimed-reset.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@untimed-reset.edu`, is_active: true };
  const retirement = untimed(cloudEvent(TYPES.retired, { user: { id }, organization: org }));
  const send = sender(topicOf(0), 2);
  await send(structured(cloudEvent(TYPES.activated, userData(org, user), { time: '2026-06-13T00:00:10Z' }), id));
  await send(stampedAt(retirement, id, '2026-06-13T00:00:20Z'));
  await handled(await send(structured(cloudEvent(TYPES.updated, userData(org, { ...user, name: 'Updated' }), { time: '2026-06-13T00:00:30Z' }), id)));
  expect((await api.get(`users/${id}/`)).body.membership).toBeNull();
  await handled(await send(stampedAt(retirement, id, '2026-06-13T00:00:05Z')));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ name: 'Updated', membership: { group: { id: group.id } } });
}, 60000);

test('a catalog change of 10, a deletion without time stamped 20, then the deletion stamped 5: the course stands', async () => {
  const { org } = await orgWithRule(service, 'untimed-deletion.edu');
  const key = `course-v1:UNTIMED+D${newUserId()}+R`;
  const deletion = untimed(cloudEvent(TYPES.courseDeleted, { course_key: key }));
  const send = sender(topicOf(2), 2);
  await send(
    structured(cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name: 'Kept' }, organization: org }, { time: '2026-06-14T00:00:10Z' }), key),
  );
  await handled(await send(stampedAt(deletion, key, '2026-06-14T00:00:20Z')));
  expect(await courseIn(org, key)).toBeNull();
  await handled(await send(stampedAt(deletion, key, '2026-06-14T00:00:05Z')));

  expect((await courseIn(org, key))?.name).toBe('Kept');
}, 60000);

// Found by a long run of the event-history model (seed 684700583): an event without time whose
// earliest Kafka record was placed below the record's floor (stale) was not remembered, so its
// later record was taken for a new event and applied at its later timestamp.
test('a retirement of 6, a login of 5 (folded under the retirement), a registration without time stamped 4 (stale), a login of 6, then the registration stamped 7: it changes nothing', async () => {
  const { org, api } = await orgWithRule(service, 'untimed-stale.edu');
  const id = newUserId();
  const user = { id, email: `learner${id}@untimed-stale.edu`, is_active: true };
  const registration = untimed(cloudEvent(TYPES.registered, userData(org, { ...user, name: 'Twin', is_active: false })));
  const send = sender(topicOf(1), 2);
  await send(structured(cloudEvent(TYPES.retired, { user: { id }, organization: org }, { time: '2026-06-15T00:00:06Z' }), id));
  await send(structured(cloudEvent(TYPES.login, userData(org, user), { time: '2026-06-15T00:00:05Z' }), id));
  await send(stampedAt(registration, id, '2026-06-15T00:00:04Z'));
  await handled(await send(structured(cloudEvent(TYPES.login, userData(org, { ...user, name: 'Later' }), { time: '2026-06-15T00:00:06Z' }), id)));
  expect((await api.get(`users/${id}/`)).body.name).toBe('Later');
  await handled(await send(stampedAt(registration, id, '2026-06-15T00:00:07Z')));

  expect((await api.get(`users/${id}/`)).body).toMatchObject({ name: 'Later' });
  expect(await storedActive(service, org, id)).toBe(true);
}, 60000);

test('a deletion of 6, a catalog change of 5 (folded under the deletion), a change without time stamped 4 (stale), a change of 6, then that change stamped 7: it changes nothing', async () => {
  const { org } = await orgWithRule(service, 'untimed-stale-course.edu');
  const key = `course-v1:UNTIMED+S${newUserId()}+R`;
  const catalog = (name: string, time?: string) =>
    cloudEvent(TYPES.catalogChanged, { catalog_info: { course_key: key, name }, organization: org }, time === undefined ? {} : { time });
  const change = untimed(catalog('Twin'));
  const send = sender(topicOf(2), 2);
  await send(structured(cloudEvent(TYPES.courseDeleted, { course_key: key }, { time: '2026-06-16T00:00:06Z' }), key));
  await send(structured(catalog('Before', '2026-06-16T00:00:05Z'), key));
  await send(stampedAt(change, key, '2026-06-16T00:00:04Z'));
  await handled(await send(structured(catalog('Later', '2026-06-16T00:00:06Z'), key)));
  expect((await courseIn(org, key))?.name).toBe('Later');
  await handled(await send(stampedAt(change, key, '2026-06-16T00:00:07Z')));

  expect((await courseIn(org, key))?.name).toBe('Later');
}, 60000);

// Issue 44, "once per activation": the service applies a period's rules when it first sees the
// learner active in it; an older event of the period arriving after a rule was created is no new
// activation (SPEC §5: "an older event never applies them again").
test('a login of 5, a rule created, then the activation of 3 (same email): no membership; the next period’s activation applies the rule', async () => {
  const { org, api } = await orgWithRule(service, 'first-arrival-other.edu');
  const group = (await api.post('course-access-groups/', { name: 'later', description: '' })).body as { id: number };
  const id = newUserId();
  const user = (is_active: boolean) => userData(org, { id, email: `learner${id}@first-arrival.edu`, is_active, name: 'First' });
  const send = sender(topicOf(0), 2);
  await handled(await send(structured(cloudEvent(TYPES.login, user(true), { time: '2026-07-01T00:00:05Z' }), id)));
  expect((await api.post('membership-rules/', { name: 'first', domain: 'first-arrival.edu', group: group.id })).status).toBe(201);
  await handled(await send(structured(cloudEvent(TYPES.activated, user(true), { time: '2026-07-01T00:00:03Z' }), id)));
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: null });

  await handled(await send(structured(cloudEvent(TYPES.updated, user(false), { time: '2026-07-01T00:00:06Z' }), id)));
  await handled(await send(structured(cloudEvent(TYPES.login, user(true), { time: '2026-07-01T00:00:07Z' }), id)));
  expect((await api.get(`users/${id}/`)).body).toMatchObject({ id, membership: { group: { id: group.id } } });
}, 60000);
