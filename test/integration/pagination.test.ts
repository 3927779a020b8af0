// SPEC §3 pagination: limit (default 20, at most 1000) and offset; the envelope; absolute
// next/previous links keeping the other parameters; 400 for values that are not non-negative integers.
import { API, client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken, staffToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
const N = 40;

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-p'));
  const seed = seeder(service.db, 'org-p');
  // Inserted out of order: the list is ordered by id whatever the insertion order.
  for (let i = N; i >= 1; i--) await seed.user(i, { name: i % 2 ? 'Odd One' : 'Even One' });
});
afterAll(() => service.close());

const url = (query: string) => `${service.baseUrl}${API}/users/${query}`;
const page = async (query: string) => {
  const res = await a.get(`users/${query}`);
  expect(res.status).toBe(200);
  return { ...res.body, ids: res.body.results.map((u: { id: number }) => u.id) };
};
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test('an empty list', async () => {
  const empty = client(service.baseUrl, await staffToken());
  expect((await empty.get('users/?organization_uuid=nobody')).body).toEqual({ count: 0, next: null, previous: null, results: [] });
  expect((await empty.get('users/?organization_uuid=nobody&offset=40')).body).toMatchObject({ count: 0, next: null, results: [] });
});

test('the default page: 20, ordered by id, with an absolute next link', async () => {
  const p = await page('');
  expect(p).toMatchObject({ count: N, previous: null, next: url('?limit=20&offset=20') });
  expect(p.ids).toEqual(range(1, 20));
});

test('the exact page boundary: the last full page has no next', async () => {
  const p = await page('?offset=20');
  expect(p.ids).toEqual(range(21, 40));
  expect(p.next).toBeNull();
  expect(p.previous).toBe(url('?limit=20')); // back to the first page: no offset, as DRF
  expect((await page('?limit=40')).next).toBeNull();
  expect((await page('?limit=39')).next).toBe(url('?limit=39&offset=39'));
});

test('a partial last page, and an offset past the end', async () => {
  const last = await page('?limit=15&offset=30');
  expect(last.ids).toEqual(range(31, 40));
  expect(last).toMatchObject({ next: null, previous: url('?limit=15&offset=15') });
  const past = await page('?offset=100');
  expect(past).toMatchObject({ count: N, results: [], next: null, previous: url('?limit=20&offset=80') });
});

test('walking next links visits every item once, in order', async () => {
  const seen: number[] = [];
  let next: string | null = url('?limit=7');
  while (next) {
    const res: { body: { results: { id: number }[]; next: string | null } } = await a.get(next.slice(service.baseUrl.length));
    seen.push(...res.body.results.map((u: { id: number }) => u.id));
    next = res.body.next;
  }
  expect(seen).toEqual(range(1, N));
});

test('limit 0 means the default; a limit over 1000 is capped at 1000', async () => {
  expect((await page('?limit=0')).ids).toEqual(range(1, 20));
  const big = await page('?limit=5000&offset=1');
  expect(big.ids).toEqual(range(2, N));
  expect(big.previous).toBe(url('?limit=1000'));
  expect(big.next).toBeNull();
});

test.each([
  ['limit=-1', 'limit'],
  ['limit=abc', 'limit'],
  ['limit=1.5', 'limit'],
  ['limit=', 'limit'],
  ['limit=%201', 'limit'],
  ['limit=1e2', 'limit'],
  ['offset=-5', 'offset'],
  ['offset=x', 'offset'],
  ['offset=', 'offset'],
])('%s is a 400 naming the parameter', async (query, name) => {
  const res = await a.get(`users/?${query}`);
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ [name]: ['A valid non-negative integer is required.'] });
});

test('links keep every other parameter; forwarded protocol and host count only with TRUST_PROXY=on', async () => {
  const p = await page('?search=odd&no_group=true&limit=5&offset=5');
  expect(p.count).toBe(20);
  const next = new URL(p.next);
  expect(`${next.origin}${next.pathname}`).toBe(`${service.baseUrl}${API}/users/`);
  expect(Object.fromEntries(next.searchParams)).toEqual({ search: 'odd', no_group: 'true', limit: '5', offset: '10' });
  expect(Object.fromEntries(new URL(p.previous).searchParams)).toEqual({ search: 'odd', no_group: 'true', limit: '5' });
  const forwarded = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'lms.example.com' };
  // Off by default: any client could otherwise choose the host written into the links.
  expect((await a.get('users/?limit=5', forwarded)).body.next).toBe(`${service.baseUrl}${API}/users/?limit=5&offset=5`);
  const behindProxy = await startTestService({ TRUST_PROXY: 'on', MONGO_DB: service.config.MONGO_DB });
  try {
    const proxied = await client(behindProxy.baseUrl, await siteAdminToken('org-p')).get('users/?limit=5', forwarded);
    expect(proxied.body.next).toBe(`https://lms.example.com${API}/users/?limit=5&offset=5`);
  } finally {
    await behindProxy.stop(); // not close(): the database is the first service's
  }
});
