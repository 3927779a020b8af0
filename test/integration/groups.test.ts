// docs/api.md: the course-access-groups resource over HTTP against the real local stack.
import { client } from '../helpers/http';
import { startTestService, type TestService } from '../helpers/stack';
import { learnerToken, siteAdminToken, staffToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  b = client(service.baseUrl, await siteAdminToken('org-b'));
});
afterAll(() => service.close());

test('create, retrieve, list, PATCH and DELETE have the SPEC shapes and codes', async () => {
  const created = await a.post('course-access-groups/', { name: 'Nurses', description: 'Ward staff', extra: 'ignored' });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({ id: expect.any(Number), name: 'Nurses', description: 'Ward staff' });
  const id = created.body.id;

  expect((await a.get(`course-access-groups/${id}/`)).body).toEqual(created.body);
  expect((await a.get(`course-access-groups/${id}`)).status).toBe(200); // without the trailing slash

  const list = await a.get('course-access-groups/');
  expect(list.body).toEqual({ count: 1, next: null, previous: null, results: [created.body] });

  const patched = await a.patch(`course-access-groups/${id}/`, { name: 'Doctors' });
  expect(patched.status).toBe(200);
  expect(patched.body).toEqual({ id, name: 'Doctors', description: 'Ward staff' });

  expect((await a.delete(`course-access-groups/${id}/`)).status).toBe(204);
  const again = await a.delete(`course-access-groups/${id}/`);
  expect(again.status).toBe(404);
  expect(again.body).toEqual({ detail: 'Not found.' });
});

test('name of 32 characters is accepted, 33 refused in DRF shape, and nothing is written', async () => {
  expect((await a.post('course-access-groups/', { name: 'x'.repeat(32), description: '' })).status).toBe(201);
  const refused = await a.post('course-access-groups/', { name: 'y'.repeat(33), description: '' });
  expect(refused.status).toBe(400);
  expect(refused.body).toEqual({ name: ['Ensure this field has no more than 32 characters.'] });
  const missing = await a.post('course-access-groups/', {});
  expect(missing.body).toEqual({ name: ['This field is required.'], description: ['This field is required.'] });
  const names = (await a.get('course-access-groups/')).body.results.map((g: { name: string }) => g.name);
  expect(names).not.toContain('y'.repeat(33));
});

test("another organization's group behaves exactly like a missing one", async () => {
  const { body } = await a.post('course-access-groups/', { name: 'Private to A', description: '' });
  expect((await b.get(`course-access-groups/${body.id}/`)).status).toBe(404);
  expect((await b.patch(`course-access-groups/${body.id}/`, { name: 'x' })).status).toBe(404);
  expect((await b.delete(`course-access-groups/${body.id}/`)).status).toBe(404);
  expect((await b.get('course-access-groups/')).body.results).toEqual([]);
  expect((await a.get(`course-access-groups/${body.id}/`)).body.name).toBe('Private to A');
});

test('401 without a token, 403 for a learner, staff may name an organization', async () => {
  const anon = client(service.baseUrl);
  expect((await anon.get('course-access-groups/')).status).toBe(401);
  const learner = client(service.baseUrl, await learnerToken('org-a'));
  expect((await learner.get('course-access-groups/')).status).toBe(403);
  const staff = client(service.baseUrl, await staffToken());
  const res = await staff.get('course-access-groups/?organization_uuid=org-b');
  expect(res.status).toBe(200);
  expect(res.body.count).toBe(0);
  expect((await a.get('course-access-groups/?organization_uuid=org-b')).status).toBe(403);
});

test('body errors: 415 for a non-JSON type, 400 for malformed JSON or a list, 405 with Allow', async () => {
  const bad = await a.post('course-access-groups/', 'name=x', { 'Content-Type': 'text/plain' });
  expect(bad.status).toBe(415);
  expect(typeof bad.body.detail).toBe('string');
  expect((await a.post('course-access-groups/', '{"name":')).status).toBe(400);
  expect((await a.post('course-access-groups/', '[1]')).body).toEqual({
    non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
  });
  const put = await a.put('course-access-groups/', { name: 'x' });
  expect(put.status).toBe(405);
  expect(put.headers.get('allow')).toMatch(/GET/);
});
