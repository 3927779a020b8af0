// docs/api.md: group-course links: shapes and codes, a (course, group) pair linked once, references.
import { client } from '../helpers/http';
import { expectRefusedWithoutWrites, seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
const groupRef = (g: { id: number; name: string }) => ({ id: g.id, name: g.name });
let a: ReturnType<typeof client>;
let g1: { id: number; name: string };
let g2: { id: number; name: string };
const C1 = 'course-v1:ORG+ONE+2024';
const C2 = 'course-v1:ORG+TWO+2024';
const ref = (key: string) => ({ id: key, name: `Course ${key}` });

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  const seed = seeder(service.db, 'org-a');
  await seed.course(C1);
  await seed.course(C2);
  g1 = groupRef((await a.post('course-access-groups/', { name: 'One', description: '' })).body);
  g2 = groupRef((await a.post('course-access-groups/', { name: 'Two', description: '' })).body);
});
afterAll(() => service.close());

/** A 400 with `body`, and nothing written. */
const refused = (request: () => Promise<{ status: number; body: unknown }>, body: unknown) => expectRefusedWithoutWrites(service.db, request, 400, body);
const unique = { non_field_errors: ['The fields course, group must make a unique set.'] };

test('create, retrieve, list, PATCH and DELETE have the SPEC shapes and codes', async () => {
  const created = await a.post('group-courses/', { course: C1, group: g1.id });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({ id: expect.any(Number), course: ref(C1), group: g1 });
  const id = created.body.id;
  expect((await a.get(`group-courses/${id}/`)).body).toEqual(created.body);
  expect((await a.get('group-courses/')).body).toEqual({ count: 1, next: null, previous: null, results: [created.body] });

  const moved = await a.patch(`group-courses/${id}/`, { group: g2.id });
  expect(moved.status).toBe(200);
  expect(moved.body).toEqual({ id, course: ref(C1), group: g2 });
  const both = await a.patch(`group-courses/${id}/`, { course: C2, group: g1.id });
  expect(both.body).toEqual({ id, course: ref(C2), group: g1 });
  expect((await a.get(`group-courses/${id}/`)).body).toEqual(both.body);
  expect((await a.patch(`group-courses/${id}/`, {})).body).toEqual(both.body);
  // One document for the link, keyed by its new pair.
  const raw = await service.db.collection('group_courses').find({ id }).toArray();
  expect(raw.map((d) => d._id)).toEqual([`${C2}|${g1.id}`]);

  expect((await a.delete(`group-courses/${id}/`)).status).toBe(204);
  expect((await a.delete(`group-courses/${id}/`)).status).toBe(404);
  expect((await a.get('group-courses/')).body.count).toBe(0);
});

test('a (course, group) pair is linked once: a duplicate create or PATCH is a 400, nothing written', async () => {
  const first = (await a.post('group-courses/', { course: C1, group: g1.id })).body;
  const second = (await a.post('group-courses/', { course: C1, group: g2.id })).body;
  await refused(() => a.post('group-courses/', { course: C1, group: g1.id }), unique);
  await refused(() => a.patch(`group-courses/${second.id}/`, { group: g1.id }), unique);
  // The same course in another group, or another course in the group, is fine.
  const third = await a.post('group-courses/', { course: C2, group: g1.id });
  expect(third.status).toBe(201);
  for (const id of [first.id, second.id, third.body.id]) await a.delete(`group-courses/${id}/`);
});

test('validation and references: 400 on the field, nothing written', async () => {
  await refused(() => a.post('group-courses/', {}), { course: ['This field is required.'], group: ['This field is required.'] });
  await refused(() => a.post('group-courses/', { course: '', group: 'x' }), {
    course: ['This field may not be blank.'],
    group: ['A valid integer is required.'],
  });
  await refused(() => a.post('group-courses/', { course: 7, group: g1.id }), { course: ['Not a valid string.'] });
  await refused(() => a.post('group-courses/', { course: 'course-v1:ORG+NOPE+1', group: 4242 }), {
    course: ['Invalid pk "course-v1:ORG+NOPE+1" - object does not exist.'],
    group: ['Invalid pk "4242" - object does not exist.'],
  });
  const { body } = await a.post('group-courses/', { course: C1, group: g1.id });
  await refused(() => a.patch(`group-courses/${body.id}/`, { course: 'course-v1:ORG+NOPE+1' }), {
    course: ['Invalid pk "course-v1:ORG+NOPE+1" - object does not exist.'],
  });
  expect((await a.patch('group-courses/424242/', { course: 5 })).status).toBe(404);
  await a.delete(`group-courses/${body.id}/`);
});
