// docs/api.md: public-course records: create, list, retrieve, delete (no PATCH); one per course.
import { client } from '../helpers/http';
import { expectRefusedWithoutWrites, seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
const C1 = 'course-v1:ORG+ONE+2024';

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  await seeder(service.db, 'org-a').course(C1, 'One');
});
afterAll(() => service.close());

/** A 400 with `body`, and nothing written. */
const refused = (request: () => Promise<{ status: number; body: unknown }>, body: unknown) => expectRefusedWithoutWrites(service.db, request, 400, body);

test('create, retrieve, list and DELETE have the SPEC shapes and codes; the course shows it', async () => {
  const created = await a.post('public-courses/', { course: C1 });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({ id: expect.any(Number), course: { id: C1, name: 'One' } });
  const id = created.body.id;
  expect((await a.get(`public-courses/${id}/`)).body).toEqual(created.body);
  expect((await a.get('public-courses/')).body).toEqual({ count: 1, next: null, previous: null, results: [created.body] });
  expect((await a.get(`courses/${C1}/`)).body.public_status).toEqual({ is_public: true, id });

  expect((await a.delete(`public-courses/${id}/`)).status).toBe(204);
  expect((await a.delete(`public-courses/${id}/`)).status).toBe(404);
  expect((await a.get(`courses/${C1}/`)).body.public_status).toEqual({ is_public: false });
});

test('a course has at most one public record: the second is a 400 on `course`, nothing written', async () => {
  const { body } = await a.post('public-courses/', { course: C1 });
  await refused(() => a.post('public-courses/', { course: C1 }), { course: ['This course is already public.'] });
  await a.delete(`public-courses/${body.id}/`);
});

test('validation: required, type, unknown course', async () => {
  await refused(() => a.post('public-courses/', {}), { course: ['This field is required.'] });
  await refused(() => a.post('public-courses/', { course: ['x'] }), { course: ['Not a valid string.'] });
  await refused(() => a.post('public-courses/', { course: 'x'.repeat(256) }), { course: ['Ensure this field has no more than 255 characters.'] });
  await refused(() => a.post('public-courses/', { course: 'course-v1:ORG+NOPE+1' }), {
    course: ['Invalid pk "course-v1:ORG+NOPE+1" - object does not exist.'],
  });
});

test('no PATCH or PUT: 405 with Allow', async () => {
  const { body } = await a.post('public-courses/', { course: C1 });
  for (const res of [await a.patch(`public-courses/${body.id}/`, {}), await a.put(`public-courses/${body.id}/`, {})]) {
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')?.split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'HEAD']);
    expect(res.body).toEqual({ detail: expect.stringMatching(/not allowed/) });
  }
});
