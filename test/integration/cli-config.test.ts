// Issue 7: `cag export` and `cag import-config` move an organization's configuration to another.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportConfiguration } from '../../src/cli/export';
import { ImportConfigError, importConfiguration } from '../../src/cli/import-config';
import { client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

// Two deployments: the configuration moves from `source` (org-src) to `target` (org-new), whose
// LMS knows the same courses and users except course c3 and user 3.
let source: TestService;
let target: TestService;
let src: ReturnType<typeof client>;
let dst: ReturnType<typeof client>;
let dir: string;
let exported: string;

beforeAll(async () => {
  [source, target] = await Promise.all([startTestService(), startTestService()]);
  src = client(source.baseUrl, await siteAdminToken('org-src'));
  dst = client(target.baseUrl, await siteAdminToken('org-new'));
  dir = await mkdtemp(join(tmpdir(), 'cag-config-'));
  const from = seeder(source.db, 'org-src');
  const to = seeder(target.db, 'org-new');
  for (const key of ['c1', 'c2', 'c3']) await from.course(key);
  for (const id of [1, 2, 3]) await from.user(id);
  for (const key of ['c1', 'c2']) await to.course(key);
  for (const id of [1, 2]) await to.user(id);
  // The target already used some ids: the import must claim new ones and remap every reference.
  await dst.delete(`course-access-groups/${(await dst.post('course-access-groups/', { name: 'scratch', description: '' })).body.id}/`);

  const g1 = (await src.post('course-access-groups/', { name: 'One', description: 'first' })).body.id;
  const g2 = (await src.post('course-access-groups/', { name: 'Two', description: '' })).body.id;
  expect((await src.post('membership-rules/', { name: 'r', domain: 'example.com', group: g2 })).status).toBe(201);
  await src.post('group-courses/', { course: 'c1', group: g1 });
  await src.post('group-courses/', { course: 'c3', group: g2 });
  await src.post('public-courses/', { course: 'c2' });
  await src.post('memberships/', { user: 1, group: g1 });
  await src.post('memberships/', { user: 2, group: g2 });
  await src.post('memberships/', { user: 3, group: g2 });
  await src.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true });
  exported = join(dir, 'config.json');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await Promise.all([source.close(), target.close()]);
});

/** What the admin API lists, with ids replaced by names so two organizations compare. */
async function view(http: ReturnType<typeof client>) {
  const results = async (path: string) => (await http.get(`${path}?limit=1000`)).body.results;
  const groups = await results('course-access-groups/');
  return {
    groups: groups.map((g: { name: string; description: string }) => [g.name, g.description]),
    rules: (await results('membership-rules/')).map((r: { domain: string; group: { name: string } }) => [r.domain, r.group.name]),
    links: (await results('group-courses/')).map((l: { course: { id: string }; group: { name: string } }) => [l.course.id, l.group.name]),
    public: (await results('public-courses/')).map((p: { course: { id: string } }) => p.course.id),
    memberships: (await results('memberships/')).map((m: { user: { id: number }; group: { name: string } }) => [m.user.id, m.group.name]),
    site: (await http.get('site-configuration/')).body,
  };
}

test('export then import into a fresh organization gives the same lists (ids aside) and reports what it skipped', async () => {
  const document = await exportConfiguration(source.db, 'org-src');
  expect(document.version).toBe(1);
  await writeFile(exported, JSON.stringify(document));
  const report = await importConfiguration(target.db, 'org-new', exported, { merge: false });
  expect(report.skipped).toEqual({ courses: ['c3'], users: [3], membership_rules: [], group_courses: [], memberships: [] });
  expect(report.created).toEqual({ groups: 2, membership_rules: 1, group_courses: 1, public_courses: 1, memberships: 2 });

  const before = await view(src);
  expect(await view(dst)).toEqual({
    ...before,
    links: before.links.filter(([course]: [string]) => course !== 'c3'),
    memberships: before.memberships.filter(([user]: [number]) => user !== 3),
  });
  // New ids were claimed in the target: the first group there was the deleted scratch one.
  const ids = (await dst.get('course-access-groups/')).body.results.map((g: { id: number }) => g.id);
  expect(ids).toHaveLength(2);
  expect(Math.min(...ids)).toBeGreaterThan(1);
});

test('an organization that already has configuration is refused without --merge, and nothing is written', async () => {
  const before = await view(dst);
  await expect(importConfiguration(target.db, 'org-new', exported, { merge: false })).rejects.toThrow(ImportConfigError);
  expect(await view(dst)).toEqual(before);
  const merged = await importConfiguration(target.db, 'org-new', exported, { merge: true });
  // The domain already has a rule there and the users already have memberships: skipped, not doubled.
  expect(merged.skipped.membership_rules).toEqual(['example.com']);
  expect(merged.skipped.memberships).toEqual([1, 2]);
});

test('a file that is not a configuration export is refused by its schema', async () => {
  const bad = join(dir, 'bad.json');
  await writeFile(bad, JSON.stringify({ version: 1, organization: 'x', groups: 'nope' }));
  await expect(importConfiguration(target.db, 'org-empty', bad, { merge: false })).rejects.toThrow(/is not a configuration export/);
});
