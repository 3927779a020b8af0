// docs/api.md: membership rules: shapes and codes, the domain rule, one rule per domain per organization.
import { client } from '../helpers/http';
import { expectRefusedWithoutWrites } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;
let g1: { id: number; name: string };
let g2: { id: number; name: string };
const groupRef = (g: { id: number; name: string }) => ({ id: g.id, name: g.name });
const BAD_DOMAIN = { domain: ['Enter a valid domain name, such as example.com.'] };

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  b = client(service.baseUrl, await siteAdminToken('org-b'));
  g1 = groupRef((await a.post('course-access-groups/', { name: 'One', description: '' })).body);
  g2 = groupRef((await a.post('course-access-groups/', { name: 'Two', description: '' })).body);
});
afterAll(() => service.close());

/** A 400 with `body`, and nothing written. */
const refused = (request: () => Promise<{ status: number; body: unknown }>, body: unknown) => expectRefusedWithoutWrites(service.db, request, 400, body);
const rulesDocs = () => service.db.collection('membership_rules').find({ org: 'org-a' }).sort({ _id: 1 }).toArray();

test('create, retrieve, list, PATCH and DELETE have the SPEC shapes and codes', async () => {
  const created = await a.post('membership-rules/', { name: 'Staff', domain: 'Staff.Example.COM', group: g1.id });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({ id: expect.any(Number), name: 'Staff', domain: 'staff.example.com', group: g1 });
  const id = created.body.id;
  expect((await a.get(`membership-rules/${id}/`)).body).toEqual(created.body);
  expect((await a.get('membership-rules/')).body).toEqual({ count: 1, next: null, previous: null, results: [created.body] });

  const renamed = await a.patch(`membership-rules/${id}/`, { name: 'Staff 2', group: g2.id });
  expect(renamed.body).toEqual({ id, name: 'Staff 2', domain: 'staff.example.com', group: g2 });
  // A new domain: the rule keeps its id, the old domain is free again.
  const moved = await a.patch(`membership-rules/${id}/`, { domain: 'NEW.example.org' });
  expect(moved.status).toBe(200);
  expect(moved.body).toEqual({ id, name: 'Staff 2', domain: 'new.example.org', group: g2 });
  // One document, under its id, whatever its domain (src/domain/by-id.ts).
  expect((await rulesDocs()).map((d) => [d._id, d.id, d.domain])).toEqual([[String(id), id, 'new.example.org']]);
  expect((await a.get(`membership-rules/${id}/`)).body).toEqual(moved.body);
  // The same domain in another case is no change at all.
  expect((await a.patch(`membership-rules/${id}/`, { domain: 'New.Example.Org' })).body).toEqual(moved.body);

  expect((await a.delete(`membership-rules/${id}/`)).status).toBe(204);
  expect((await a.delete(`membership-rules/${id}/`)).status).toBe(404);
  expect(await rulesDocs()).toEqual([]);
});

test('a domain has at most one rule per organization (compared lowercase); another organization may have it too', async () => {
  const first = (await a.post('membership-rules/', { name: 'r', domain: 'dup.example.com', group: g1.id })).body;
  const second = (await a.post('membership-rules/', { name: 'r', domain: 'other.example.com', group: g1.id })).body;
  const taken = { domain: ['A membership rule for this domain already exists.'] };
  await refused(() => a.post('membership-rules/', { name: 'r', domain: 'dup.example.com', group: g2.id }), taken);
  await refused(() => a.post('membership-rules/', { name: 'r', domain: 'DUP.Example.com', group: g2.id }), taken);
  await refused(() => a.patch(`membership-rules/${second.id}/`, { domain: 'Dup.example.com' }), taken);
  const bGroup = (await b.post('course-access-groups/', { name: 'B', description: '' })).body;
  expect((await b.post('membership-rules/', { name: 'r', domain: 'dup.example.com', group: bGroup.id })).status).toBe(201);
  for (const id of [first.id, second.id]) await a.delete(`membership-rules/${id}/`);
});

describe('domain: a DNS name, letters, digits, hyphens, dots, a TLD of letters', () => {
  test.each([
    '@example.com',
    '111',
    '===',
    ' example.com ',
    ' example.com',
    'example.com ',
    'user@example.com',
    'example',
    'example.c0m',
    'example.c',
    '.example.com',
    'example.com.',
    'exa mple.com',
    'exa_mple.com',
    '-example.com',
    'example-.com',
    'example..com',
    'ex*mple.com',
    'bücher.de',
    `${'a'.repeat(64)}.com`,
  ])('"%s" is refused', async (domain) => {
    await refused(() => a.post('membership-rules/', { name: 'r', domain, group: g1.id }), BAD_DOMAIN);
  });

  test('an empty domain or one longer than 253 characters is refused', async () => {
    await refused(() => a.post('membership-rules/', { name: 'r', domain: '', group: g1.id }), {
      domain: ['This field may not be blank.', BAD_DOMAIN.domain[0]],
    });
    await refused(() => a.post('membership-rules/', { name: 'r', domain: `${'a.'.repeat(126)}com`, group: g1.id }), {
      domain: ['Ensure this field has no more than 253 characters.'],
    });
  });

  test.each(['example.com', 'EXAMPLE.COM', 'a.io', 'mail-1.example.co.uk', '1and1.de', `${'a'.repeat(63)}.com`, 'xn--bcher-kva.de'])(
    '"%s" is accepted and stored lowercase',
    async (domain) => {
      const res = await a.post('membership-rules/', { name: 'r', domain, group: g1.id });
      expect(res.status).toBe(201);
      expect(res.body.domain).toBe(domain.toLowerCase());
      await a.delete(`membership-rules/${res.body.id}/`);
    },
  );

  test('PATCH applies the same rule', async () => {
    const { body } = await a.post('membership-rules/', { name: 'r', domain: 'patch.example.com', group: g1.id });
    await refused(() => a.patch(`membership-rules/${body.id}/`, { domain: '@patch.example.com' }), BAD_DOMAIN);
    await a.delete(`membership-rules/${body.id}/`);
  });
});

test('name: 1 to 255 characters; every field required on create; the group must exist', async () => {
  const ok = await a.post('membership-rules/', { name: 'n'.repeat(255), domain: 'name.example.com', group: g1.id });
  expect(ok.status).toBe(201);
  await refused(() => a.post('membership-rules/', { name: 'n'.repeat(256), domain: 'name2.example.com', group: g1.id }), {
    name: ['Ensure this field has no more than 255 characters.'],
  });
  await refused(() => a.post('membership-rules/', { name: '', domain: 'name2.example.com', group: g1.id }), {
    name: ['This field may not be blank.'],
  });
  await refused(() => a.post('membership-rules/', {}), {
    name: ['This field is required.'],
    domain: ['This field is required.'],
    group: ['This field is required.'],
  });
  await refused(() => a.post('membership-rules/', { name: 'r', domain: 'name3.example.com', group: 31337 }), {
    group: ['Invalid pk "31337" - object does not exist.'],
  });
  await refused(() => a.patch(`membership-rules/${ok.body.id}/`, { name: 'n'.repeat(256) }), {
    name: ['Ensure this field has no more than 255 characters.'],
  });
  await refused(() => a.patch(`membership-rules/${ok.body.id}/`, { group: 31337, domain: 'free.example.com' }), {
    group: ['Invalid pk "31337" - object does not exist.'],
  });
  await a.delete(`membership-rules/${ok.body.id}/`);
});
