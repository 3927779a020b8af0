// The `group` filter of `memberships/` and `membership-rules/` (added for the console, which
// lists a group's members and rules and counts what deleting a group removes).
import { client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken, staffToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;
let g1: number;
let g2: number;
let bGroup: number;

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  b = client(service.baseUrl, await siteAdminToken('org-b'));
  const seed = seeder(service.db, 'org-a');
  await seed.user(1);
  await seed.user(2);
  await seed.user(3);
  // A site administrator may be a member: `users/?group=` leaves them out, `memberships/?group=` does not.
  await seed.user(4, { is_site_admin: true });
  await seeder(service.db, 'org-b').user(9);
  g1 = (await a.post('course-access-groups/', { name: 'One', description: '' })).body.id;
  g2 = (await a.post('course-access-groups/', { name: 'Two', description: '' })).body.id;
  bGroup = (await b.post('course-access-groups/', { name: 'B', description: '' })).body.id;
  for (const [user, group] of [
    [1, g1],
    [2, g2],
    [3, g1],
    [4, g1],
  ] as const) {
    expect((await a.post('memberships/', { user, group })).status).toBe(201);
  }
  expect((await b.post('memberships/', { user: 9, group: bGroup })).status).toBe(201);
  for (const [domain, group] of [
    ['one.example.com', g1],
    ['two.example.com', g2],
    ['uno.example.com', g1],
  ] as const) {
    expect((await a.post('membership-rules/', { name: domain, domain, group })).status).toBe(201);
  }
  expect((await b.post('membership-rules/', { name: 'b', domain: 'one.example.com', group: bGroup })).status).toBe(201);
});
afterAll(() => service.close());

const userIds = (body: { results: { user: { id: number } }[] }) => body.results.map((m) => m.user.id);

describe('memberships/?group=', () => {
  test("lists the group's memberships only, site administrators included, with the count", async () => {
    const res = await a.get(`memberships/?group=${g1}`);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(3);
    expect(userIds(res.body)).toEqual([1, 3, 4]);
    expect(res.body.results.every((m: { group: { id: number } }) => m.group.id === g1)).toBe(true);
    expect(userIds((await a.get(`memberships/?group=${g2}`)).body)).toEqual([2]);
    expect((await a.get('memberships/')).body.count).toBe(4);
  });
  test('paginates within the filter, and next keeps it', async () => {
    const res = await a.get(`memberships/?group=${g1}&limit=1&offset=1`);
    expect(res.body.count).toBe(3);
    expect(userIds(res.body)).toEqual([3]);
    expect(res.body.next).toContain(`group=${g1}`);
  });
  test("another organization's group matches nothing, for a site admin and for staff naming the organization", async () => {
    expect((await a.get(`memberships/?group=${bGroup}`)).body).toEqual({ count: 0, next: null, previous: null, results: [] });
    const staff = client(service.baseUrl, await staffToken());
    expect(userIds((await staff.get(`memberships/?group=${bGroup}&organization_uuid=org-b`)).body)).toEqual([9]);
  });
  test.each(['one', '1.0', '-1', ''])('group=%s is a 400 naming the parameter', async (value) => {
    const res = await a.get(`memberships/?group=${value}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ group: ['A valid integer is required.'] });
  });
});

describe('membership-rules/?group=', () => {
  test("lists the group's rules only, with the count", async () => {
    const res = await a.get(`membership-rules/?group=${g1}`);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(2);
    expect(res.body.results.map((r: { domain: string }) => r.domain)).toEqual(['one.example.com', 'uno.example.com']);
    expect((await a.get(`membership-rules/?group=${g2}&limit=1`)).body.count).toBe(1);
    expect((await a.get('membership-rules/')).body.count).toBe(3);
    expect((await a.get('membership-rules/?group=424242')).body.count).toBe(0);
  });
  test("another organization's group matches nothing", async () => {
    expect((await a.get(`membership-rules/?group=${bGroup}`)).body.count).toBe(0);
    expect((await b.get(`membership-rules/?group=${bGroup}`)).body.count).toBe(1);
  });
  test('a bad group is a 400 naming the parameter', async () => {
    const res = await a.get('membership-rules/?group=x&limit=y');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ group: ['A valid integer is required.'], limit: ['A valid non-negative integer is required.'] });
  });
});

test('the OpenAPI document lists the new parameter on both lists', async () => {
  const doc = (await a.get('openapi.json')).body;
  for (const path of ['/memberships/', '/membership-rules/']) {
    const params = doc.paths[path].get.parameters as { name: string; in: string; schema: { pattern: string } }[];
    expect(params.find((p) => p.name === 'group')).toMatchObject({ in: 'query', schema: { pattern: '^[0-9]{1,15}$' } });
  }
});
