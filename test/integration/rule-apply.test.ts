// Issue 7: POST membership-rules/<id>/apply/ puts the organization's existing matching learners into the rule's group.
import { client } from '../helpers/http';
import { seeder, snapshot } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { learnerToken, siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;
let partners: number;
let staff: number;
let ruleId: number;

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  b = client(service.baseUrl, await siteAdminToken('org-b'));
  partners = (await a.post('course-access-groups/', { name: 'Partners', description: '' })).body.id;
  staff = (await a.post('course-access-groups/', { name: 'Staff', description: '' })).body.id;
  const seed = seeder(service.db, 'org-a');
  await seed.user(1, { email: 'one@Partner.org' }); // active, matching: joins
  await seed.user(2, { email: 'two@partner.org', is_active: false }); // inactive: left out
  await seed.user(3, { email: 'three@partner.org' }); // already a member of Staff: kept there
  await seed.user(4, { email: 'four@other.org' }); // another domain
  await seed.user(5, { email: 'weird@x@partner.org' }); // the last `@` decides: matches
  await seeder(service.db, 'org-b').user(6, { email: 'six@partner.org' }); // another organization
  expect((await a.post('memberships/', { user: 3, group: staff })).status).toBe(201);
  ruleId = (await a.post('membership-rules/', { name: 'p', domain: 'partner.org', group: partners })).body.id;
});
afterAll(() => service.close());

const memberships = async () =>
  await service.db
    .collection('memberships')
    .find({}, { projection: { _id: 0, org: 1, user: 1, group: 1, automatic: 1 } })
    .sort({ user: 1 })
    .toArray();

test('applying a rule makes active matching users without a membership automatic members; again, it creates none', async () => {
  const first = await a.post(`membership-rules/${ruleId}/apply/`);
  expect(first.status).toBe(200);
  expect(first.body).toEqual({ created: 2 });
  expect(await memberships()).toEqual([
    { org: 'org-a', user: 1, group: partners, automatic: true },
    { org: 'org-a', user: 3, group: staff, automatic: false },
    { org: 'org-a', user: 5, group: partners, automatic: true },
  ]);
  const before = await snapshot(service.db);
  const again = await a.post(`membership-rules/${ruleId}/apply/`, {});
  expect(again.body).toEqual({ created: 0 });
  const { id_claims: _a, ...after } = await snapshot(service.db);
  const { id_claims: _b, ...expected } = before;
  expect(after).toEqual(expected);
});

test("an unknown rule, or another organization's, is a 404; a learner is refused", async () => {
  expect((await a.post('membership-rules/999999/apply/')).status).toBe(404);
  expect((await b.post(`membership-rules/${ruleId}/apply/`, {})).status).toBe(404);
  const learner = client(service.baseUrl, await learnerToken('org-a'));
  expect((await learner.post(`membership-rules/${ruleId}/apply/`)).status).toBe(403);
});

test('a body, when sent, must still be a JSON object of a JSON type', async () => {
  expect((await a.post(`membership-rules/${ruleId}/apply/`, 'x=1', { 'Content-Type': 'text/plain' })).status).toBe(415);
  expect((await a.post(`membership-rules/${ruleId}/apply/`, '[1]')).status).toBe(400);
});

test('a learner whose membership went with its deleted group has none: applying another rule joins them (the record still names the dead group)', async () => {
  const seed = seeder(service.db, 'org-c');
  const c = client(service.baseUrl, await siteAdminToken('org-c'));
  await seed.user(21, { email: 'x@dead-group.org' });
  const gone = (await c.post('course-access-groups/', { name: 'Gone', description: '' })).body.id;
  expect((await c.post('memberships/', { user: 21, group: gone })).status).toBe(201);
  expect((await c.delete(`course-access-groups/${gone}/`)).status).toBe(204);
  const next = (await c.post('course-access-groups/', { name: 'Next', description: '' })).body.id;
  const rule = (await c.post('membership-rules/', { name: 'd', domain: 'dead-group.org', group: next })).body.id;

  expect((await c.post(`membership-rules/${rule}/apply/`)).body).toEqual({ created: 1 });
  expect((await c.get('users/21/')).body.membership).toMatchObject({ group: { id: next } });
});
