// docs/api.md: GET / PATCH site-configuration/, {"ENABLE_COURSE_ACCESS_GROUPS": <boolean>}, default false.
import { client } from '../helpers/http';
import { snapshot } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken, staffToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
});
afterAll(() => service.close());

test('the flag is off by default, PATCH turns it on and off, GET shows it', async () => {
  expect(await a.get('site-configuration/')).toMatchObject({ status: 200, body: { ENABLE_COURSE_ACCESS_GROUPS: false } });
  expect((await a.get('site-configuration')).status).toBe(200);
  const on = await a.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true, other: 1 });
  expect(on).toMatchObject({ status: 200, body: { ENABLE_COURSE_ACCESS_GROUPS: true } });
  expect((await a.get('site-configuration/')).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: true });
  // One document per organization, keyed by it.
  expect(await service.db.collection('site_configurations').find().toArray()).toEqual([{ _id: 'org-a', org: 'org-a', ENABLE_COURSE_ACCESS_GROUPS: true }]);
  expect((await a.patch('site-configuration/', {})).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: true });
  expect((await a.patch('site-configuration', { ENABLE_COURSE_ACCESS_GROUPS: false })).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: false });
  expect((await a.get('site-configuration/')).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: false });
});

test('concurrent first PATCHes of a new organization all succeed, leaving one document', async () => {
  const staff = client(service.baseUrl, await staffToken());
  const results = await Promise.all(
    [true, true, true, true].map((v) => staff.patch('site-configuration/?organization_uuid=org-race', { ENABLE_COURSE_ACCESS_GROUPS: v })),
  );
  expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  expect(await service.db.collection('site_configurations').countDocuments({ org: 'org-race' })).toBe(1);
});

test.each([
  [{ ENABLE_COURSE_ACCESS_GROUPS: 'true' }, { ENABLE_COURSE_ACCESS_GROUPS: ['Must be a valid boolean.'] }],
  [{ ENABLE_COURSE_ACCESS_GROUPS: 1 }, { ENABLE_COURSE_ACCESS_GROUPS: ['Must be a valid boolean.'] }],
  [{ ENABLE_COURSE_ACCESS_GROUPS: null }, { ENABLE_COURSE_ACCESS_GROUPS: ['This field may not be null.'] }],
])('PATCH %j is a 400 naming the field, and nothing is written', async (body, errors) => {
  const before = await snapshot(service.db);
  const res = await a.patch('site-configuration/', body);
  expect(res.status).toBe(400);
  expect(res.body).toEqual(errors);
  expect(await snapshot(service.db)).toEqual(before);
});

test('only GET and PATCH: others are 405 with Allow', async () => {
  for (const res of [await a.post('site-configuration/', {}), await a.put('site-configuration/', {}), await a.delete('site-configuration/')]) {
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')?.split(/,\s*/).sort()).toEqual(['GET', 'HEAD', 'PATCH']);
  }
});
