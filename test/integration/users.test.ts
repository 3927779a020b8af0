// docs/api.md: the read-only users resource: shape, membership, site administrators left out, filters.
import { client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let g1: { id: number; name: string };
let g2: { id: number; name: string };
let m1: number;

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  const seed = seeder(service.db, 'org-a');
  await seed.user(101, { username: 'alice', name: 'Alice Liddell', email: 'Alice@Wonder.land' });
  await seed.user(102, { username: 'bob', name: 'Bob (the builder)', email: 'bob+work@build.example.com' });
  await seed.user(103, { username: 'carol.x', name: 'Carol', email: 'carol@example.com' });
  await seed.user(104, { username: 'admin', name: 'Site Admin', email: 'admin@example.com', is_site_admin: true });
  await seed.user(105, { username: 'dave', name: 'Dave .*', email: 'dave@example.org', is_active: false });
  await seeder(service.db, 'org-b').user(201, { username: 'alice-b', name: 'Alice of B', email: 'alice@wonder.land' });
  g1 = (await a.post('course-access-groups/', { name: 'One', description: '' })).body;
  g2 = (await a.post('course-access-groups/', { name: 'Two', description: '' })).body;
  m1 = (await a.post('memberships/', { user: 101, group: g1.id })).body.id;
  await a.post('memberships/', { user: 102, group: g2.id });
  await a.post('memberships/', { user: 104, group: g2.id }); // a site administrator may be a member
});
afterAll(() => service.close());

const ids = async (query: string) => {
  const res = await a.get(`users/${query}`);
  expect(res.status).toBe(200);
  expect(res.body.count).toBe(res.body.results.length);
  return res.body.results.map((u: { id: number }) => u.id);
};

test("the list: the organization's users but its site administrators, by id, with their membership", async () => {
  const res = await a.get('users/');
  expect(res.body).toMatchObject({ count: 4, next: null, previous: null });
  expect(res.body.results[0]).toEqual({
    id: 101,
    username: 'alice',
    name: 'Alice Liddell',
    email: 'Alice@Wonder.land',
    membership: { id: m1, group: { id: g1.id, name: 'One' } },
  });
  expect(res.body.results.map((u: { id: number }) => u.id)).toEqual([101, 102, 103, 105]);
  expect(res.body.results[2].membership).toBeNull();
});

test('retrieve: a user, and a site administrator is not found', async () => {
  expect((await a.get('users/103/')).body).toEqual({ id: 103, username: 'carol.x', name: 'Carol', email: 'carol@example.com', membership: null });
  expect((await a.get('users/104/')).status).toBe(404);
  expect((await a.get('users/201/')).status).toBe(404); // another organization's
  expect((await a.get('users/abc/')).status).toBe(404);
});

test('read-only: POST and DELETE are 405', async () => {
  expect((await a.post('users/', { username: 'x' })).status).toBe(405);
  expect((await a.delete('users/101/')).status).toBe(405);
});

describe('search: username, name and email; literal; every term must match', () => {
  test.each([
    ['?search=ALICE', [101]],
    ['?search=wonder', [101]], // email
    ['?search=liddell', [101]], // name
    ['?search=carol.x', [103]], // username, "." literal
    ['?search=carolxx', []],
    ['?search=(the', [102]],
    ['?search=.*', [105]],
    ['?search=%2Bwork', [102]], // "+"
    ['?search=example%20bob', [102]],
    ['?search=example,carol', [103]],
    ['?search=example', [102, 103, 105]],
    ['?search=admin', []], // the site administrator is not in the resource
    ['?search=[a-z]', []],
    ['?search=%5Cd', []],
    ['?search=a%7Cb', []], // "a|b"
  ])('%s', async (query, expected) => {
    expect(await ids(query)).toEqual(expected);
  });
});

describe('email_exact: the whole email, case-insensitively', () => {
  test.each([
    ['alice@wonder.land', [101]],
    ['ALICE@WONDER.LAND', [101]],
    ['Alice@Wonder.land', [101]],
    ['alice@wonder', []], // not a substring match
    ['lice@wonder.land', []],
    ['bob+work@build.example.com', [102]],
    ['bob.work@build.example.com', []],
    ['admin@example.com', []], // site administrator
    ['.*', []],
  ])('%s', async (email, expected) => {
    expect(await ids(`?email_exact=${encodeURIComponent(email)}`)).toEqual(expected);
  });
});

describe('group and no_group', () => {
  test('group: its members (site administrators left out)', async () => {
    expect(await ids(`?group=${g1.id}`)).toEqual([101]);
    expect(await ids(`?group=${g2.id}`)).toEqual([102]);
    expect(await ids('?group=424242')).toEqual([]);
  });
  test('no_group: true for users without a membership, false for members', async () => {
    expect(await ids('?no_group=true')).toEqual([103, 105]);
    expect(await ids('?no_group=True')).toEqual([103, 105]);
    expect(await ids('?no_group=1')).toEqual([103, 105]);
    expect(await ids('?no_group=false')).toEqual([101, 102]);
    expect(await ids('?no_group=False')).toEqual([101, 102]);
    expect(await ids('?no_group=0')).toEqual([101, 102]);
  });
  test('filters combine', async () => {
    expect(await ids(`?group=${g2.id}&search=bob`)).toEqual([102]);
    expect(await ids(`?group=${g2.id}&search=alice`)).toEqual([]);
    expect(await ids(`?group=${g1.id}&no_group=true`)).toEqual([]);
    expect(await ids('?no_group=true&search=example')).toEqual([103, 105]);
    expect(await ids('?no_group=false&email_exact=BOB%2BWORK@build.example.com')).toEqual([102]);
  });
  test.each([
    ['?group=one', { group: ['A valid integer is required.'] }],
    ['?group=1.0', { group: ['A valid integer is required.'] }],
    ['?no_group=yes', { no_group: ['Must be a valid boolean.'] }],
    ['?no_group=', { no_group: ['Must be a valid boolean.'] }],
  ])('%s is a 400 naming the parameter', async (query, body) => {
    const res = await a.get(`users/${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(body);
  });
  test('a repeated parameter counts with its last value, as Django reads it', async () => {
    expect(await ids(`?group=x&group=${g1.id}`)).toEqual([101]);
  });
});
