// docs/api.md: access decisions for the LMS over HTTP against the real local stack: the seven rules
// in order, the four actions, callers, unknown courses, batches, and freshness after changes.
import type { CommandStartedEvent } from 'mongodb';
import { COLLECTIONS } from '../../src/db/collections';
import { createFactsCache } from '../../src/features/access/cache';
import { accessQueries } from '../../src/features/access/queries';
import { accessSeed } from '../helpers/access-seed';
import { client } from '../helpers/http';
import { startTestService, type TestService } from '../helpers/stack';
import { learnerToken, serviceToken, siteAdminToken, staffToken, token } from '../helpers/tokens';

const ACTIONS = ['course.enroll', 'course.see_in_catalog', 'course.see_about_page', 'course.see_exists'];

let service: TestService;
let lms: ReturnType<typeof client>;
let a: ReturnType<typeof accessSeed>;
let b: ReturnType<typeof accessSeed>;
let off: ReturnType<typeof accessSeed>;
let group: number;

// Users of org-a: 101 member of `group`, 102 active non-member, 103 inactive member,
// 104 platform staff (non-member), 105 site administrator of org-a, 106 member of another group.
// Courses of org-a: A+PRIV (linked to `group`), A+OTHER (not linked), A+PUB (public).
beforeAll(async () => {
  service = await startTestService();
  lms = client(service.baseUrl, await serviceToken());
  a = accessSeed(service.db, 'org-a');
  b = accessSeed(service.db, 'org-b');
  off = accessSeed(service.db, 'org-off');
  await a.flag(true);
  await b.flag(true);
  group = await a.group('Nurses');
  const otherGroup = await a.group('Doctors');
  await Promise.all([a.course('course-v1:A+PRIV+1'), a.course('course-v1:A+OTHER+1'), a.course('course-v1:A+PUB+1')]);
  await a.link('course-v1:A+PRIV+1', group);
  await a.link('course-v1:A+OTHER+1', otherGroup);
  await a.makePublic('course-v1:A+PUB+1');
  await Promise.all([
    a.user(101),
    a.user(102),
    a.user(103, { is_active: false }),
    a.user(104, { is_staff: true }),
    a.user(105, { is_site_admin: true }),
    a.user(106),
  ]);
  await Promise.all([a.member(101, group), a.member(103, group), a.member(106, otherGroup)]);
  await b.course('course-v1:B+PRIV+1');
  await b.user(201, { is_site_admin: true });
  await off.course('course-v1:OFF+PRIV+1'); // org-off never set its flag: default false
});
afterAll(() => service.close());

const single = (course: string, user?: number | string, action = 'course.enroll', as = lms) =>
  as.get(`access/?course_id=${encodeURIComponent(course)}&action=${action}${user === undefined ? '' : `&user_id=${user}`}`);

test.each([
  ['rule 1: flag off (never set) allows everyone, even no user', 'course-v1:OFF+PRIV+1', undefined, true, 'feature_disabled'],
  ['rule 2: a public course beats having no user', 'course-v1:A+PUB+1', undefined, true, 'public'],
  ['rule 2: a public course beats an inactive user', 'course-v1:A+PUB+1', 103, true, 'public'],
  ['rule 3: no user on a private course is denied', 'course-v1:A+PRIV+1', undefined, false, 'no_access'],
  ['rule 3: an unknown user is denied', 'course-v1:A+PRIV+1', 999, false, 'no_access'],
  ['rule 3: an inactive user is denied even as a member of a linked group', 'course-v1:A+PRIV+1', 103, false, 'no_access'],
  ['rule 4: platform staff is allowed on a private course', 'course-v1:A+PRIV+1', 104, true, 'staff'],
  ["rule 5: a site administrator of the course's organization is allowed", 'course-v1:A+OTHER+1', 105, true, 'site_admin'],
  ["rule 3: a user of another organization is unknown in the course's", 'course-v1:A+PRIV+1', 201, false, 'no_access'],
  ['rule 6: a member of a linked group is allowed', 'course-v1:A+PRIV+1', 101, true, 'group'],
  ['rule 7: a member of a group not linked to the course is denied', 'course-v1:A+PRIV+1', 106, false, 'no_access'],
  ['rule 7: an active user without a group is denied', 'course-v1:A+PRIV+1', 102, false, 'no_access'],
])('%s', async (_name, course, user, allowed, reason) => {
  const res = await single(course, user);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ allowed, reason });
});

test('all four actions follow the same rules, with and without the trailing slash', async () => {
  for (const action of ACTIONS) {
    expect((await single('course-v1:A+PRIV+1', 101, action)).body).toEqual({ allowed: true, reason: 'group' });
    expect((await single('course-v1:A+PRIV+1', 102, action)).body).toEqual({ allowed: false, reason: 'no_access' });
  }
  const noSlash = await lms.get('access?course_id=course-v1:A%2BPRIV%2B1&action=course.enroll&user_id=101');
  expect(noSlash.body).toEqual({ allowed: true, reason: 'group' });
  const batchNoSlash = await lms.post('access/batch', { action: 'course.see_exists', user_id: 101, course_ids: ['course-v1:A+PRIV+1'] });
  expect(batchNoSlash.body.results).toEqual([{ course_id: 'course-v1:A+PRIV+1', allowed: true, reason: 'group' }]);
});

test('bad input is a 400 in DRF shape: unknown action, missing course_id or action, non-integer user_id', async () => {
  const bad = await single('course-v1:A+PRIV+1', 101, 'course.delete');
  expect(bad.status).toBe(400);
  expect(bad.body).toEqual({ action: ['"course.delete" is not a valid choice.'] });
  const missing = await lms.get('access/');
  expect(missing.status).toBe(400);
  expect(missing.body).toEqual({ course_id: ['This field is required.'], action: ['This field is required.'] });
  for (const user of ['abc', '1.5', '']) {
    const res = await single('course-v1:A+PRIV+1', user);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ user_id: ['A valid integer is required.'] });
  }
  expect((await single('course-v1:A+PRIV+1', 0)).body).toEqual({ user_id: ['Ensure this value is greater than or equal to 1.'] });
  const batch = await lms.post('access/batch/', { action: 'nope', user_id: 'x', course_ids: 'course-v1:A+PRIV+1' });
  expect(batch.status).toBe(400);
  expect(batch.body).toEqual({
    action: ['"nope" is not a valid choice.'],
    user_id: ['A valid integer is required.'],
    course_ids: ['Expected a list of items but got type "string".'],
  });
  expect((await lms.post('access/batch/', { action: 'course.enroll' })).body).toEqual({ course_ids: ['This field is required.'] });
});

test('an unknown course is 404 in a single check and unknown_course in a batch', async () => {
  const res = await single('course-v1:NOPE+X+1', 101);
  expect(res.status).toBe(404);
  expect(res.body).toEqual({ detail: 'Not found.' });
  const batch = await lms.post('access/batch/', { action: 'course.enroll', user_id: 101, course_ids: ['course-v1:NOPE+X+1'] });
  expect(batch.body).toEqual({ results: [{ course_id: 'course-v1:NOPE+X+1', allowed: false, reason: 'unknown_course' }] });
});

test('a batch answers in request order, duplicates included, across organizations, with each rule', async () => {
  const ids = [
    'course-v1:A+OTHER+1',
    'course-v1:A+PRIV+1',
    'course-v1:NOPE+X+1',
    'course-v1:A+PUB+1',
    'course-v1:OFF+PRIV+1',
    'course-v1:A+PRIV+1',
    'course-v1:B+PRIV+1',
  ];
  const res = await lms.post('access/batch/', { action: 'course.see_in_catalog', user_id: 101, course_ids: ids });
  expect(res.status).toBe(200);
  expect(res.body.results).toEqual([
    { course_id: 'course-v1:A+OTHER+1', allowed: false, reason: 'no_access' },
    { course_id: 'course-v1:A+PRIV+1', allowed: true, reason: 'group' },
    { course_id: 'course-v1:NOPE+X+1', allowed: false, reason: 'unknown_course' },
    { course_id: 'course-v1:A+PUB+1', allowed: true, reason: 'public' },
    { course_id: 'course-v1:OFF+PRIV+1', allowed: true, reason: 'feature_disabled' },
    { course_id: 'course-v1:A+PRIV+1', allowed: true, reason: 'group' },
    // user 101 belongs to org-a: in org-b's course they are an unknown user (rule 3)
    { course_id: 'course-v1:B+PRIV+1', allowed: false, reason: 'no_access' },
  ]);
  const anonymous = await lms.post('access/batch/', { action: 'course.enroll', user_id: null, course_ids: ids.slice(0, 2) });
  expect(anonymous.body.results.map((r: { reason: string }) => r.reason)).toEqual(['no_access', 'no_access']);
  const staff = await lms.post('access/batch/', { action: 'course.enroll', user_id: 104, course_ids: ids.slice(0, 2) });
  expect(staff.body.results.map((r: { reason: string }) => r.reason)).toEqual(['staff', 'staff']);
});

test('a batch takes 1000 ids, refuses 1001 with a 400 on course_ids, and answers an empty list with no results', async () => {
  const thousand = Array.from({ length: 1000 }, (_, i) => (i % 2 ? 'course-v1:A+PRIV+1' : `course-v1:NOPE+${i}+1`));
  const ok = await lms.post('access/batch/', { action: 'course.enroll', user_id: 101, course_ids: thousand });
  expect(ok.status).toBe(200);
  expect(ok.body.results).toHaveLength(1000);
  expect(ok.body.results[999]).toEqual({ course_id: 'course-v1:A+PRIV+1', allowed: true, reason: 'group' });
  expect(ok.body.results[998]).toEqual({ course_id: 'course-v1:NOPE+998+1', allowed: false, reason: 'unknown_course' });
  const tooMany = await lms.post('access/batch/', { action: 'course.enroll', user_id: 101, course_ids: [...thousand, 'x'] });
  expect(tooMany.status).toBe(400);
  expect(tooMany.body).toEqual({ course_ids: ['Ensure this field has no more than 1000 elements.'] });
  const empty = await lms.post('access/batch/', { action: 'course.enroll', user_id: 101, course_ids: [] });
  expect(empty.status).toBe(200);
  expect(empty.body).toEqual({ results: [] });
});

describe('callers (SPEC §4)', () => {
  test('service and platform staff tokens may ask about any organization', async () => {
    const staff = client(service.baseUrl, await staffToken());
    expect((await single('course-v1:B+PRIV+1', 201, 'course.enroll', staff)).body).toEqual({ allowed: true, reason: 'site_admin' });
    expect((await single('course-v1:A+PRIV+1', 101, 'course.enroll', lms)).body).toEqual({ allowed: true, reason: 'group' });
  });

  test("a site administrator may ask about their own organization's courses; another's behave as unknown", async () => {
    const admin = client(service.baseUrl, await siteAdminToken('org-a'));
    expect((await single('course-v1:A+PRIV+1', 101, 'course.enroll', admin)).body).toEqual({ allowed: true, reason: 'group' });
    const other = await single('course-v1:B+PRIV+1', 201, 'course.enroll', admin);
    expect(other.status).toBe(404);
    const batch = await admin.post('access/batch/', { action: 'course.enroll', user_id: 101, course_ids: ['course-v1:B+PRIV+1', 'course-v1:A+PRIV+1'] });
    expect(batch.body.results).toEqual([
      { course_id: 'course-v1:B+PRIV+1', allowed: false, reason: 'unknown_course' },
      { course_id: 'course-v1:A+PRIV+1', allowed: true, reason: 'group' },
    ]);
  });

  test('a learner (even asking about themself) gets 403, a token without the site_admin role too; no token 401', async () => {
    const learner = client(service.baseUrl, await learnerToken('org-a', 101));
    expect((await single('course-v1:A+PRIV+1', 101, 'course.enroll', learner)).status).toBe(403);
    const forbidden = await learner.post('access/batch/', { action: 'course.enroll', user_id: 101, course_ids: [] });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ detail: 'You do not have permission to perform this action.' });
    // permissions come before validation, as in DRF: an invalid query still gets 403
    expect((await learner.get('access/?action=bad')).status).toBe(403);
    const orglessAdmin = client(service.baseUrl, await token({ user_id: 7, roles: ['site_admin'] }));
    expect((await single('course-v1:A+PRIV+1', 101, 'course.enroll', orglessAdmin)).status).toBe(403);
    const anonymous = client(service.baseUrl);
    expect((await single('course-v1:A+PRIV+1', 101, 'course.enroll', anonymous)).status).toBe(401);
    expect((await anonymous.post('access/batch/', { action: 'course.enroll', course_ids: [] })).status).toBe(401);
  });
});

test('the OpenAPI document has both endpoints, with the schemas that validate them', async () => {
  const { body } = await client(service.baseUrl).get('openapi.json');
  const get = body.paths['/access/'].get;
  expect(get.parameters.map((p: { name: string }) => p.name)).toEqual(['course_id', 'action', 'user_id', 'organization_uuid']);
  expect(get.parameters[1].schema.enum).toEqual(ACTIONS);
  expect(get.responses['200'].content['application/json'].schema.properties.reason.enum).toContain('group');
  const post = body.paths['/access/batch/'].post;
  expect(post.requestBody.content['application/json'].schema.properties.course_ids.maxItems).toBe(1000);
  expect(post.responses['200'].content['application/json'].schema.properties.results.items.properties.reason.enum).toContain('unknown_course');
});

describe('several service processes on one database', () => {
  let other: TestService; // a second instance, caching too
  let uncached: TestService; // a third, without the cache, counting its database commands
  const finds: string[] = [];
  const findsOnOther: string[] = []; // the collections instance B reads

  beforeAll(async () => {
    other = await startTestService({ MONGO_DB: service.config.MONGO_DB, MONGO_URL: `${service.config.MONGO_URL.replace(/\/?$/, '/')}?monitorCommands=true` });
    other.client.on('commandStarted', (e: CommandStartedEvent) => {
      if (e.commandName === 'find') findsOnOther.push(String(e.command.find));
    });
    uncached = await startTestService({
      MONGO_DB: service.config.MONGO_DB,
      MONGO_URL: `${service.config.MONGO_URL.replace(/\/?$/, '/')}?monitorCommands=true`,
      ACCESS_CACHE: 'off',
    });
    // Not the process's own background reads (the shape watch, the change relay's lease and outbox), which may land mid-request.
    const background = new Set<string>([COLLECTIONS.upgrades, COLLECTIONS.leases, COLLECTIONS.outbox]);
    uncached.client.on('commandStarted', (e: CommandStartedEvent) => {
      if (e.commandName === 'find' && !background.has(String(e.command.find))) finds.push(String(e.command.find));
    });
  });
  // Stop both before the main service drops the database they share.
  afterAll(async () => {
    await other.stop();
    await uncached.stop();
  });

  test('a change made through instance A (or any writer) is visible to the very next decision on instance B', async () => {
    const fresh = accessSeed(service.db, 'org-fresh');
    const course = await fresh.course('course-v1:FRESH+1+1');
    const user = await fresh.user(401);
    const onB = client(other.baseUrl, await serviceToken());
    const adminOnA = client(service.baseUrl, await siteAdminToken('org-fresh'));
    const decisionOnB = async () => (await single(course, user, 'course.enroll', onB)).body.reason as string;
    const batchOnB = async () =>
      (await onB.post('access/batch/', { action: 'course.enroll', user_id: user, course_ids: [course] })).body.results[0].reason as string;

    expect(await decisionOnB()).toBe('feature_disabled'); // B has now cached the facts
    await fresh.flag(true); // what PATCH site-configuration/ writes
    expect(await decisionOnB()).toBe('no_access');

    await fresh.makePublic(course); // POST public-courses/
    expect(await decisionOnB()).toBe('public');
    await fresh.tenant.collection(COLLECTIONS.publicCourses).deleteOne({ _id: course }); // DELETE public-courses/{id}/
    expect(await batchOnB()).toBe('no_access');

    const { body: created } = await adminOnA.post('course-access-groups/', { name: 'Fresh', description: '' });
    await fresh.member(user, created.id); // POST memberships/
    expect(await decisionOnB()).toBe('no_access');
    await fresh.link(course, created.id); // POST group-courses/
    expect(await decisionOnB()).toBe('group');
    expect(await batchOnB()).toBe('group');

    expect((await adminOnA.delete(`course-access-groups/${created.id}/`)).status).toBe(204); // cascades to the link
    expect(await decisionOnB()).toBe('no_access');
    expect(await batchOnB()).toBe('no_access');
    // and instance A agrees
    expect((await single(course, user)).body.reason).toBe('no_access');

    await fresh.flag(false); // PATCH site-configuration/ back off
    expect(await decisionOnB()).toBe('feature_disabled');
  });

  test('a link PATCHed onto another course, then another group, through instance A: the very next decision on B follows it, with the link table cached and past its bound', async () => {
    const seed = accessSeed(service.db, 'org-moved');
    await seed.flag(true);
    const [c1, c2] = await Promise.all([seed.course('course-v1:MOVED+1+1'), seed.course('course-v1:MOVED+2+1')]);
    const user = await seed.user(601);
    const adminOnA = client(service.baseUrl, await siteAdminToken('org-moved'));
    const [g1, g2] = [
      (await adminOnA.post('course-access-groups/', { name: 'One', description: '' })).body.id as number,
      (await adminOnA.post('course-access-groups/', { name: 'Two', description: '' })).body.id as number,
    ];
    await seed.member(user, g1);
    const link = (await adminOnA.post('group-courses/', { course: c1, group: g1 })).body.id as number;
    const onB = client(other.baseUrl, await serviceToken());
    // Past its bound (here 0 links), no table: the pairs asked for are read each time, never kept.
    const pastBound = accessQueries(service.db, createFactsCache(service.db, { enabled: true }), { maxCachedLinks: 0 });
    const decisions = async () => {
      const facts = await pastBound.facts([c1, c2], user, () => true);
      return {
        onB: [(await single(c1, user, 'course.enroll', onB)).body.reason, (await single(c2, user, 'course.enroll', onB)).body.reason],
        pastBound: [facts.get(c1)!.memberOfLinkedGroup, facts.get(c2)!.memberOfLinkedGroup],
      };
    };
    expect(await decisions()).toEqual({ onB: ['group', 'no_access'], pastBound: [true, false] }); // both now hold what they read
    expect((await adminOnA.patch(`group-courses/${link}/`, { course: c2 })).status).toBe(200);
    expect(await decisions()).toEqual({ onB: ['no_access', 'group'], pastBound: [false, true] });
    expect((await adminOnA.patch(`group-courses/${link}/`, { group: g2 })).status).toBe(200);
    expect(await decisions()).toEqual({ onB: ['no_access', 'no_access'], pastBound: [false, false] });
  });

  test('once the course facts are cached, a course they settle (public, flag off) reads nothing of the learner', async () => {
    const seed = accessSeed(service.db, 'org-settled');
    await seed.flag(true);
    const open = await seed.course('course-v1:SETTLED+open+1');
    const closed = await seed.course('course-v1:SETTLED+closed+1');
    await seed.makePublic(open);
    await Promise.all([seed.user(501), seed.user(502), seed.user(503)]);
    const onB = client(other.baseUrl, await serviceToken());
    expect((await single(open, 501, 'course.enroll', onB)).body.reason).toBe('public'); // caches the course facts
    findsOnOther.length = 0;
    expect((await single(open, 502, 'course.enroll', onB)).body.reason).toBe('public');
    expect(findsOnOther.filter((c) => c !== COLLECTIONS.changeLog)).toEqual([]);
    expect((await single(closed, 503, 'course.enroll', onB)).body.reason).toBe('no_access'); // courses it does not settle still read the learner
    expect(findsOnOther).toEqual(expect.arrayContaining([COLLECTIONS.users, COLLECTIONS.memberships]));
  });

  test('a batch costs the same number of database reads for 2 courses as for 200', async () => {
    const seed = accessSeed(service.db, 'org-count');
    await seed.flag(true);
    const g = await seed.group();
    await seed.user(301);
    await seed.member(301, g);
    const keys = Array.from({ length: 200 }, (_, i) => `course-v1:CNT+${i}+1`);
    await Promise.all(keys.map((k) => seed.course(k)));
    await Promise.all(keys.slice(0, 100).map((k) => seed.link(k, g)));
    const lmsOnUncached = client(uncached.baseUrl, await serviceToken());
    const readsFor = async (ids: string[]) => {
      finds.length = 0;
      const res = await lmsOnUncached.post('access/batch/', { action: 'course.enroll', user_id: 301, course_ids: ids });
      expect(res.status).toBe(200);
      expect(res.body.results[0]).toEqual({ course_id: keys[0], allowed: true, reason: 'group' });
      return finds.length;
    };
    const small = await readsFor([keys[0]!, keys[199]!]);
    const large = await readsFor(keys);
    // courses, site configuration, public records, user, membership, links
    expect(small).toBe(6);
    expect(large).toBe(small);
  });
});
