// docs/api.md: no request reads, counts, links or changes another organization's records; an id of
// another organization's record behaves exactly like an id that does not exist, and nothing is
// written. Every resource, every method, both directions.
import { type Client, makeWorld, type World } from '../helpers/fixtures';
import { client } from '../helpers/http';
import { snapshot } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken, staffToken } from '../helpers/tokens';

let service: TestService;
const http: Record<'a' | 'b', Client> = {} as never;
const world: Record<'a' | 'b', World> = {} as never;

beforeAll(async () => {
  service = await startTestService();
  http.a = client(service.baseUrl, await siteAdminToken('org-a'));
  http.b = client(service.baseUrl, await siteAdminToken('org-b'));
  world.a = await makeWorld(service, http.a, 'org-a', 1);
  world.b = await makeWorld(service, http.b, 'org-b', 2);
});
afterAll(() => service.close());

const enc = encodeURIComponent;
const directions = [
  ['a', 'b'],
  ['b', 'a'],
] as const;

/** Runs `request` and checks it was refused with `status` and `body`, and wrote nothing. */
async function refusedWithoutWrites(request: () => Promise<{ status: number; body: unknown }>, status: number, body: unknown) {
  const before = await snapshot(service.db);
  const res = await request();
  expect(res.status).toBe(status);
  expect(res.body).toEqual(body);
  expect(await snapshot(service.db)).toEqual(before);
}

describe.each(directions)("org %s's ids used by org %s", (owner, caller) => {
  const other = () => world[owner];
  const as = () => http[caller];
  const notFound = { detail: 'Not found.' };

  test.each([
    ['course-access-groups', () => String(other().groupId)],
    ['courses', () => enc(other().courseKey)],
    ['group-courses', () => String(other().groupCourseId)],
    ['public-courses', () => String(other().publicCourseId)],
    ['memberships', () => String(other().membershipId)],
    ['users', () => String(other().userId)],
    ['membership-rules', () => String(other().ruleId)],
  ])('GET %s/<id> answers 404', async (resource, id) => {
    const res = await as().get(`${resource}/${id()}/`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual(notFound);
  });

  test.each([
    ['course-access-groups', () => String(other().groupId), () => ({ name: 'hijacked' })],
    ['group-courses', () => String(other().groupCourseId), () => ({ group: world[caller].groupId })],
    ['memberships', () => String(other().membershipId), () => ({ group: world[caller].groupId })],
    ['membership-rules', () => String(other().ruleId), () => ({ name: 'hijacked' })],
  ])('PATCH %s/<id> answers 404 and writes nothing', async (resource, id, body) => {
    await refusedWithoutWrites(() => as().patch(`${resource}/${id()}/`, body()), 404, notFound);
  });

  test.each([
    ['course-access-groups', () => String(other().groupId)],
    ['group-courses', () => String(other().groupCourseId)],
    ['public-courses', () => String(other().publicCourseId)],
    ['memberships', () => String(other().membershipId)],
    ['membership-rules', () => String(other().ruleId)],
  ])('DELETE %s/<id> answers 404 and deletes nothing', async (resource, id) => {
    await refusedWithoutWrites(() => as().delete(`${resource}/${id()}/`), 404, notFound);
  });

  test.each([
    ['course-access-groups', (w: World) => [w.groupId]],
    ['courses', (w: World) => [w.courseKey, w.freeCourseKey]],
    ['group-courses', (w: World) => [w.groupCourseId]],
    ['public-courses', (w: World) => [w.publicCourseId]],
    ['memberships', (w: World) => [w.membershipId]],
    ['users', (w: World) => [w.userId, w.freeUserId]],
    ['membership-rules', (w: World) => [w.ruleId]],
  ])("the %s list holds the caller's records only", async (resource, ids) => {
    const res = await as().get(`${resource}/`);
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { id: unknown }) => r.id)).toEqual(ids(world[caller]));
    expect(res.body.count).toBe(ids(world[caller]).length);
  });

  test.each([
    ['memberships', () => ({ user: other().freeUserId, group: world[caller].groupId }), 'user'],
    ['memberships', () => ({ user: world[caller].freeUserId, group: other().groupId }), 'group'],
    ['group-courses', () => ({ course: other().freeCourseKey, group: world[caller].groupId }), 'course'],
    ['group-courses', () => ({ course: world[caller].freeCourseKey, group: other().groupId }), 'group'],
    ['public-courses', () => ({ course: other().freeCourseKey }), 'course'],
    ['membership-rules', () => ({ name: 'r', domain: `${caller}-x.example.org`, group: other().groupId }), 'group'],
  ])("POST %s naming another organization's record is a 400 on that field", async (resource, body, field) => {
    const before = await snapshot(service.db);
    const res = await as().post(`${resource}/`, body());
    expect(res.status).toBe(400);
    expect(Object.keys(res.body)).toEqual([field]);
    expect(res.body[field]).toEqual([expect.stringMatching(/does not exist/)]);
    expect(await snapshot(service.db)).toEqual(before);
  });

  test.each([
    ['memberships', () => world[caller].membershipId, () => ({ group: other().groupId }), 'group'],
    ['group-courses', () => world[caller].groupCourseId, () => ({ group: other().groupId }), 'group'],
    ['group-courses', () => world[caller].groupCourseId, () => ({ course: other().freeCourseKey }), 'course'],
    ['membership-rules', () => world[caller].ruleId, () => ({ group: other().groupId }), 'group'],
  ])("PATCH %s of the caller's record naming another organization's record is a 400 on that field", async (resource, id, body, field) => {
    const before = await snapshot(service.db);
    const res = await as().patch(`${resource}/${id()}/`, body());
    expect(res.status).toBe(400);
    expect(Object.keys(res.body)).toEqual([field]);
    expect(await snapshot(service.db)).toEqual(before);
  });

  test("filters naming another organization's group find nothing", async () => {
    expect((await as().get(`courses/?group=${other().groupId}`)).body.count).toBe(0);
    expect((await as().get(`users/?group=${other().groupId}`)).body.count).toBe(0);
    expect((await as().get(`users/?email_exact=${enc(`user${other().userId}@example.com`)}`)).body.count).toBe(0);
    expect((await as().get(`courses/?search=${enc(other().courseKey)}`)).body.count).toBe(0);
  });
});

test("the site configuration is the organization's own", async () => {
  expect((await http.a.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true })).status).toBe(200);
  expect((await http.a.get('site-configuration/')).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: true });
  expect((await http.b.get('site-configuration/')).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: false });
  await http.a.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: false });
});

test('platform staff act on the organization they name, and only on it', async () => {
  const staff = client(service.baseUrl, await staffToken());
  const inB = await staff.get(`memberships/?organization_uuid=org-b`);
  expect(inB.body.results.map((m: { id: number }) => m.id)).toEqual([world.b.membershipId]);
  expect((await staff.get(`memberships/${world.a.membershipId}/?organization_uuid=org-b`)).status).toBe(404);
  expect((await staff.get(`memberships/${world.a.membershipId}/?organization_uuid=org-a`)).status).toBe(200);
  // Next/previous links keep the organization.
  const paged = await staff.get('courses/?organization_uuid=org-b&limit=1');
  expect(paged.body.next).toContain('organization_uuid=org-b');
});
