// docs/api.md: the read-only courses resource, its shape, filters and search.
import { client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
const K = {
  arts: 'course-v1:ORG+ARTS+2024',
  chem: 'course-v1:ORG+CHEM+2024',
  math: 'course-v1:ORG+MATH+2024',
  phys: 'course-v1:ORG+PHYS+2024',
  abc: 'course-v1:ORG+abc+2024',
  axbxc: 'course-v1:ORG+xyz+2024',
};
let g1: { id: number; name: string };
let g2: { id: number; name: string };
const links: Record<string, number> = {};
const publics: Record<string, number> = {};

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  const seed = seeder(service.db, 'org-a');
  await seed.course(K.math, 'Algebra (Intro)');
  await seed.course(K.phys, 'Physics .* basics');
  await seed.course(K.chem, 'Chemistry');
  await seed.course(K.arts, 'Art History');
  await seed.course(K.abc, 'A.B.C');
  await seed.course(K.axbxc, 'AxBxC');
  await seeder(service.db, 'org-b').course('course-v1:ORG+MATH+2099', 'Algebra of B');
  g1 = (await a.post('course-access-groups/', { name: 'One', description: '' })).body;
  g2 = (await a.post('course-access-groups/', { name: 'Two', description: '' })).body;
  links.mathG1 = (await a.post('group-courses/', { course: K.math, group: g1.id })).body.id;
  links.physG2 = (await a.post('group-courses/', { course: K.phys, group: g2.id })).body.id;
  links.physG1 = (await a.post('group-courses/', { course: K.phys, group: g1.id })).body.id;
  publics.math = (await a.post('public-courses/', { course: K.math })).body.id;
  publics.chem = (await a.post('public-courses/', { course: K.chem })).body.id;
});
afterAll(() => service.close());

const ids = async (query: string) => {
  const res = await a.get(`courses/${query}`);
  expect(res.status).toBe(200);
  expect(res.body.count).toBe(res.body.results.length);
  return res.body.results.map((c: { id: string }) => c.id);
};
const refused = async (query: string) => {
  const res = await a.get(`courses/${query}`);
  expect(res.status).toBe(400);
  return res.body;
};

test('the list has the SPEC shape, ordered by course id', async () => {
  const res = await a.get('courses/');
  expect(res.body.count).toBe(6);
  expect(res.body.results.map((c: { id: string }) => c.id)).toEqual([K.arts, K.chem, K.math, K.phys, K.abc, K.axbxc]);
  const byId = Object.fromEntries(res.body.results.map((c: { id: string }) => [c.id, c]));
  expect(byId[K.math]).toEqual({
    id: K.math,
    name: 'Algebra (Intro)',
    public_status: { is_public: true, id: publics.math },
    group_links: [{ id: links.mathG1, group: { id: g1.id, name: 'One' } }],
  });
  // Links by link id; `id` in public_status only when public.
  expect(byId[K.phys]).toEqual({
    id: K.phys,
    name: 'Physics .* basics',
    public_status: { is_public: false },
    group_links: [
      { id: links.physG2, group: { id: g2.id, name: 'Two' } },
      { id: links.physG1, group: { id: g1.id, name: 'One' } },
    ],
  });
});

test('retrieve by course id as it is or percent-encoded, with and without the trailing slash', async () => {
  const plain = await a.get(`courses/${K.math}/`);
  expect(plain.status).toBe(200);
  expect(plain.body.id).toBe(K.math);
  expect((await a.get(`courses/${encodeURIComponent(K.math)}`)).body).toEqual(plain.body);
  expect((await a.get(`courses/${K.math}`)).body).toEqual(plain.body);
  expect(await a.get('courses/course-v1:ORG+NOPE+2024/')).toMatchObject({ status: 404, body: { detail: 'Not found.' } });
});

test('read-only: POST, PATCH, PUT and DELETE are 405 with Allow', async () => {
  for (const res of [await a.post('courses/', {}), await a.put('courses/', {})]) {
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/GET/);
  }
  for (const res of [await a.patch(`courses/${K.math}/`, {}), await a.delete(`courses/${K.math}/`)]) {
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).not.toMatch(/PATCH|DELETE/);
  }
});

describe('search: case-insensitive substrings of id or name; every term must match; characters are literal', () => {
  test.each([
    ['?search=physics', [K.phys]],
    ['?search=PHYSICS', [K.phys]],
    ['?search=math', [K.math]], // the course id
    ['?search=ORG%2BMATH', [K.math]], // `+` of the id, percent-encoded
    ['?search=org%20algebra', [K.math]], // two terms, space
    ['?search=org,algebra', [K.math]], // two terms, comma
    ['?search=%20,algebra,%20', [K.math]], // empty terms ignored
    ['?search=algebra%20chemistry', []], // no course matches both
    ['?search=.*', [K.phys]], // literally ".*"
    ['?search=(', [K.math]],
    ['?search=(Intro)', [K.math]],
    ['?search=a.b.c', [K.abc]], // the dots do not match the "x" of AxBxC
    ['?search=[', []],
    ['?search=%5C', []], // a backslash
    ['?search=%24', []], // "$"
    ['?search=^A', []],
    ['?search=', [K.arts, K.chem, K.math, K.phys, K.abc, K.axbxc]],
    ['?search=%00', []],
  ])('%s', async (query, expected) => {
    expect(await ids(query)).toEqual(expected);
  });
});

describe('is_public', () => {
  test.each(['true', 'True', '1'])('%s: public courses', async (v) => {
    expect(await ids(`?is_public=${v}`)).toEqual([K.chem, K.math]);
  });
  test.each(['false', 'False', '0'])('%s: the others', async (v) => {
    expect(await ids(`?is_public=${v}`)).toEqual([K.arts, K.phys, K.abc, K.axbxc]);
  });
  test.each(['yes', 'TRUE', 't', '2', '', 'true '])('"%s" is a 400', async (v) => {
    expect(await refused(`?is_public=${encodeURIComponent(v)}`)).toEqual({ is_public: ['Must be a valid boolean.'] });
  });
});

describe('group and no_group', () => {
  test('group: the courses linked to it', async () => {
    expect(await ids(`?group=${g1.id}`)).toEqual([K.math, K.phys]);
    expect(await ids(`?group=${g2.id}`)).toEqual([K.phys]);
    expect(await ids('?group=99999')).toEqual([]);
  });
  test.each(['abc', '1.5', '-1', '', '1e3', '0x10'])('group "%s" is a 400', async (v) => {
    expect(await refused(`?group=${encodeURIComponent(v)}`)).toEqual({ group: ['A valid integer is required.'] });
  });
  test('no_group: true for courses without a link, false for courses with one', async () => {
    expect(await ids('?no_group=true')).toEqual([K.arts, K.chem, K.abc, K.axbxc]);
    expect(await ids('?no_group=0')).toEqual([K.math, K.phys]);
    expect(await refused('?no_group=maybe')).toEqual({ no_group: ['Must be a valid boolean.'] });
  });
  test('filters combine', async () => {
    expect(await ids(`?group=${g1.id}&is_public=true`)).toEqual([K.math]);
    expect(await ids(`?group=${g1.id}&is_public=false`)).toEqual([K.phys]);
    expect(await ids(`?group=${g1.id}&search=phys`)).toEqual([K.phys]);
    expect(await ids(`?group=${g1.id}&no_group=true`)).toEqual([]);
    expect(await ids(`?group=${g1.id}&no_group=false`)).toEqual([K.math, K.phys]);
    expect(await ids('?no_group=true&is_public=true')).toEqual([K.chem]);
    expect(await ids('?no_group=true&is_public=false&search=a')).toEqual([K.arts, K.abc, K.axbxc]);
  });
  test('several bad values are reported together, each under its parameter', async () => {
    expect(await refused('?group=x&is_public=x&no_group=x&limit=x')).toEqual({
      group: ['A valid integer is required.'],
      is_public: ['Must be a valid boolean.'],
      no_group: ['Must be a valid boolean.'],
      limit: ['A valid non-negative integer is required.'],
    });
  });
  test('a filtered list pages, and its links keep the filter', async () => {
    const first = await a.get(`courses/?group=${g1.id}&limit=1`);
    expect(first.body).toMatchObject({ count: 2, previous: null, results: [{ id: K.math }] });
    const next = new URL(first.body.next);
    expect(Object.fromEntries(next.searchParams)).toEqual({ group: String(g1.id), limit: '1', offset: '1' });
    const second = await a.get(next.pathname.replace('/course_access_groups/api/v1/', '') + next.search);
    expect(second.body).toMatchObject({ count: 2, next: null, results: [{ id: K.phys }] });
  });
  test('a link whose course was deleted (cascade under way) is not shown', async () => {
    const seed = seeder(service.db, 'org-a');
    await seed.course('course-v1:ORG+GONE+2024', 'Gone');
    const link = await a.post('group-courses/', { course: 'course-v1:ORG+GONE+2024', group: g2.id });
    expect(link.status).toBe(201);
    await seed.tenant.collection('courses').deleteOne({ _id: 'course-v1:ORG+GONE+2024' });
    expect(await ids(`?group=${g2.id}`)).toEqual([K.phys]);
    await a.delete(`group-courses/${link.body.id}/`);
  });
});
