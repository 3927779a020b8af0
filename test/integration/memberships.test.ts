// docs/api.md: memberships: shapes and codes, one membership per user, `user` set on creation only,
// references checked in the organization, and the group cascade.
import { client } from '../helpers/http';
import { expectRefusedWithoutWrites, seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
const groupRef = (g: { id: number; name: string }) => ({ id: g.id, name: g.name });
let a: ReturnType<typeof client>;
let g1: { id: number; name: string };
let g2: { id: number; name: string };

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  const seed = seeder(service.db, 'org-a');
  for (const id of [1, 2, 3, 4, 5]) await seed.user(id);
  g1 = groupRef((await a.post('course-access-groups/', { name: 'One', description: '' })).body);
  g2 = groupRef((await a.post('course-access-groups/', { name: 'Two', description: '' })).body);
});
afterAll(() => service.close());

/** A 400 with `body`, and nothing written. */
const refused = (request: () => Promise<{ status: number; body: unknown }>, body: unknown) => expectRefusedWithoutWrites(service.db, request, 400, body);

test('create, retrieve, list, PATCH and DELETE have the SPEC shapes and codes', async () => {
  const created = await a.post('memberships/', { user: 1, group: g1.id, extra: 'ignored' });
  expect(created.status).toBe(201);
  const expected = { id: expect.any(Number), user: { id: 1, username: 'user1', email: 'user1@example.com' }, group: g1 };
  expect(created.body).toEqual(expected);
  const id = created.body.id;
  expect(id).toBeGreaterThan(0);
  expect((await a.get(`memberships/${id}/`)).body).toEqual(created.body);
  expect((await a.get(`memberships/${id}`)).status).toBe(200);
  expect((await a.get('memberships/')).body).toEqual({ count: 1, next: null, previous: null, results: [created.body] });

  const patched = await a.patch(`memberships/${id}/`, { group: g2.id });
  expect(patched.status).toBe(200);
  expect(patched.body).toEqual({ ...created.body, group: g2 });
  expect((await a.patch(`memberships/${id}/`, {})).body).toEqual(patched.body);

  const deleted = await a.delete(`memberships/${id}/`);
  expect(deleted.status).toBe(204);
  expect(deleted.body).toBeNull();
  expect(await a.delete(`memberships/${id}/`)).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
  expect((await a.get(`memberships/${id}/`)).status).toBe(404);
  expect((await a.patch(`memberships/${id}/`, { group: g1.id })).status).toBe(404);
  // Ids are never reused.
  const again = await a.post('memberships/', { user: 1, group: g1.id });
  expect(again.body.id).toBeGreaterThan(id);
  await a.delete(`memberships/${again.body.id}/`);
});

test('a user has at most one membership: the second is a 400 on `user`, and nothing is written', async () => {
  expect((await a.post('memberships/', { user: 2, group: g1.id })).status).toBe(201);
  await refused(() => a.post('memberships/', { user: 2, group: g2.id }), { user: ['This user already has a membership.'] });
  await refused(() => a.post('memberships/', { user: 2, group: g1.id }), { user: ['This user already has a membership.'] });
});

test('`user` is set on creation only: a PATCH changes the group and ignores a user', async () => {
  const { body } = await a.post('memberships/', { user: 3, group: g1.id });
  const res = await a.patch(`memberships/${body.id}/`, { user: 4, group: g2.id });
  expect(res.status).toBe(200);
  expect(res.body.user.id).toBe(3);
  expect(res.body.group).toEqual(g2);
});

test('validation: each field, in DRF shape, and nothing is written', async () => {
  await refused(() => a.post('memberships/', {}), { user: ['This field is required.'], group: ['This field is required.'] });
  await refused(() => a.post('memberships/', { user: 'x', group: null }), {
    user: ['A valid integer is required.'],
    group: ['This field may not be null.'],
  });
  await refused(() => a.post('memberships/', { user: 1.5, group: 0 }), {
    user: ['A valid integer is required.'],
    group: ['Ensure this value is greater than or equal to 1.'],
  });
  await refused(() => a.post('memberships/', { user: 999, group: 999 }), {
    user: ['Invalid pk "999" - object does not exist.'],
    group: ['Invalid pk "999" - object does not exist.'],
  });
  const { body } = await a.post('memberships/', { user: 5, group: g1.id });
  await refused(() => a.patch(`memberships/${body.id}/`, { group: 999 }), { group: ['Invalid pk "999" - object does not exist.'] });
  await refused(() => a.patch(`memberships/${body.id}/`, { group: 'two' }), { group: ['A valid integer is required.'] });
  // An unknown id is a 404 even when the body is also invalid (DRF looks the object up first).
  expect((await a.patch('memberships/424242/', { group: 'two' })).status).toBe(404);
  expect((await a.put(`memberships/${body.id}/`, { group: g2.id })).status).toBe(405);
});

test('deleting a group deletes its memberships, rules and course links, and nothing of other groups', async () => {
  const seed = seeder(service.db, 'org-a');
  await seed.user(50);
  await seed.user(51);
  await seed.course('course-v1:A+CASCADE+1');
  const doomed = groupRef((await a.post('course-access-groups/', { name: 'Doomed', description: '' })).body);
  const kept = groupRef((await a.post('course-access-groups/', { name: 'Kept', description: '' })).body);
  const m = (await a.post('memberships/', { user: 50, group: doomed.id })).body;
  const mKept = (await a.post('memberships/', { user: 51, group: kept.id })).body;
  const rule = (await a.post('membership-rules/', { name: 'r', domain: 'doomed.example.com', group: doomed.id })).body;
  const ruleKept = (await a.post('membership-rules/', { name: 'r', domain: 'kept.example.com', group: kept.id })).body;
  const link = (await a.post('group-courses/', { course: 'course-v1:A+CASCADE+1', group: doomed.id })).body;
  const linkKept = (await a.post('group-courses/', { course: 'course-v1:A+CASCADE+1', group: kept.id })).body;

  expect((await a.delete(`course-access-groups/${doomed.id}/`)).status).toBe(204);
  expect((await a.get(`memberships/${m.id}/`)).status).toBe(404);
  expect((await a.get(`membership-rules/${rule.id}/`)).status).toBe(404);
  expect((await a.get(`group-courses/${link.id}/`)).status).toBe(404);
  expect((await a.get(`memberships/${mKept.id}/`)).status).toBe(200);
  expect((await a.get(`membership-rules/${ruleKept.id}/`)).status).toBe(200);
  expect((await a.get(`group-courses/${linkKept.id}/`)).status).toBe(200);
  expect((await a.get('users/50/')).body.membership).toBeNull();
  expect((await a.get('courses/course-v1:A+CASCADE+1/')).body.group_links).toEqual([{ id: linkKept.id, group: kept }]);
  // The user is free again.
  expect((await a.post('memberships/', { user: 50, group: kept.id })).status).toBe(201);
});

test('a membership moved to another group stays when the group it left is deleted (it may still be moved, and keeps where it began), and goes with the one it joined', async () => {
  const left = (await a.post('course-access-groups/', { name: 'Left', description: '' })).body;
  const joined = (await a.post('course-access-groups/', { name: 'Joined', description: '' })).body;
  await seeder(service.db, 'org-a').user(6);
  const made = await a.post('memberships/', { user: 6, group: left.id });
  expect(made.status).toBe(201);
  expect((await a.patch(`memberships/${made.body.id}/`, { group: joined.id })).status).toBe(200);
  expect((await a.delete(`course-access-groups/${left.id}/`)).status).toBe(204);
  const kept = await a.get(`memberships/${made.body.id}/`);
  expect({ status: kept.status, group: kept.body.group?.id }).toEqual({ status: 200, group: joined.id });
  expect((await a.patch(`memberships/${made.body.id}/`, { group: joined.id })).status).toBe(200);
  expect((await a.delete(`course-access-groups/${joined.id}/`)).status).toBe(204);
  expect((await a.get(`memberships/${made.body.id}/`)).status).toBe(404);
});
