// docs/console.md: a site administrator's whole day in the console, in a real browser (Debian's
// Chromium) against the real service; every step is checked through the REST API too.
import type { Browser, Page } from 'playwright-core';
import { dialogText, flashed, go, launchBrowser, openConsole, type PageWatch, settled, watch } from '../helpers/browser';
import { type EventTestService, startEventService } from '../helpers/events';
import { client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { siteAdminToken } from '../helpers/tokens';

// Browser globals used inside page.evaluate callbacks (the Node program has no DOM types).
declare const document: any;
declare const sessionStorage: any;

const ORG = 'org-a';
const ALGEBRA = 'course-v1:org-a+ALG+2025';
const BIOLOGY = 'course-v1:org-a+BIO+2025';
const CHEMISTRY = 'course-v1:org-a+CHEM+2025';
const USERS = [
  [101, 'ada', 'ada@learn.example.org'],
  [102, 'bob', 'bob@learn.example.org'],
  [103, 'cy', 'cy@other.example.com'],
  [104, 'dan', 'dan@learn.example.org'],
] as const;

let service: EventTestService;
let browser: Browser;
let page: Page;
let watched: PageWatch;
let token: string;
let rest: ReturnType<typeof client>;
const ids: { a?: number; b?: number } = {};

beforeAll(async () => {
  service = await startEventService({ SERVICE_ROLE: 'api', LOG_LEVEL: 'info' });
  const seed = seeder(service.db, ORG);
  for (const [id, username, email] of USERS) await seed.user(id, { username, name: username.toUpperCase(), email });
  await seed.course(ALGEBRA, 'Algebra');
  await seed.course(BIOLOGY, 'Biology');
  await seed.course(CHEMISTRY, 'Chemistry');
  token = await siteAdminToken(ORG, 2);
  rest = client(service.baseUrl, token);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watched = await watch(page);
}, 60000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

const membershipOf = async (user: number) => (await rest.get(`users/${user}/`)).body.membership?.group.id ?? null;

test('signs in with a pasted token: the header says whose it is and until when', async () => {
  await openConsole(page, service.baseUrl, token);
  expect(page.url()).toBe(`${service.baseUrl}/course_access_groups/console/`);
  expect(page.url()).not.toContain(token);
  expect(await page.evaluate(() => sessionStorage.length)).toBe(1);
  const who = await page.locator('.who').innerText();
  expect(who).toContain('User 2');
  expect(who).toContain('site administrator of org-a');
  expect(who).toMatch(/Token expires .+\(in (59 min|1 h)\)/);
  expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('Overview');
});

test('turns the flag on after a confirmation that says what it does to learners; Cancel changes nothing', async () => {
  const toggle = page.getByRole('button', { name: 'Turn on course access groups…' });
  await toggle.click();
  const text = await dialogText(page);
  expect(text).toContain('will see and enroll only in public courses and in the courses linked to their group');
  expect(text).toContain('3 courses neither public nor linked to a group will be hidden from every learner; 4 learners in no group');
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  expect((await rest.get('site-configuration/')).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: false });

  await toggle.click();
  await page.getByRole('dialog').getByRole('button', { name: 'Turn on' }).click();
  await flashed(page, 'Course access groups are on.');
  await page.getByRole('button', { name: 'Turn off course access groups…' }).waitFor();
  expect((await rest.get('site-configuration/')).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: true });
  await settled(page);
  expect(await page.locator('.stats').innerText()).toMatch(/Courses\s+3\s+public: 0\s+linked to a group: 0\s+in no group: 3/);
});

test('creates two groups', async () => {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Groups' }).click();
  await settled(page);
  const form = page.getByRole('form', { name: 'New group' });
  for (const [name, description] of [
    ['Cohort A', 'First cohort'],
    ['Cohort B', ''],
  ]) {
    await form.getByLabel('Name').fill(name!);
    await form.getByLabel('Description').fill(description!);
    await form.getByRole('button', { name: 'Create group' }).click();
    await flashed(page, `Group “${name}” created.`);
    await page.getByRole('link', { name: name!, exact: true }).waitFor();
  }
  const groups = (await rest.get('course-access-groups/')).body.results;
  expect(groups.map((g: { name: string; description: string }) => [g.name, g.description])).toEqual([
    ['Cohort A', 'First cohort'],
    ['Cohort B', ''],
  ]);
  ids.a = groups[0].id;
  ids.b = groups[1].id;
});

test('links a course to a group and makes another public', async () => {
  await go(page, '#/courses');
  await page.getByLabel('Group to link Algebra to').selectOption({ label: 'Cohort A' });
  await page.getByRole('button', { name: 'Link Algebra to the chosen group' }).click();
  await flashed(page, 'Algebra linked to “Cohort A”.');
  await page.getByRole('button', { name: 'Unlink Algebra from Cohort A' }).waitFor();
  const links = (await rest.get('group-courses/')).body.results;
  expect(links.map((l: { course: { id: string }; group: { id: number } }) => [l.course.id, l.group.id])).toEqual([[ALGEBRA, ids.a]]);

  await page.getByRole('button', { name: 'Make public: Biology' }).click();
  await flashed(page, 'Biology is public.');
  await page.getByRole('button', { name: 'Make private: Biology' }).waitFor();
  expect((await rest.get('public-courses/')).body.results.map((p: { course: { id: string } }) => p.course.id)).toEqual([BIOLOGY]);

  // The filters narrow the list: public ones, then the ones in no group.
  const filters = page.getByRole('search', { name: 'Filter courses' });
  await filters.getByLabel('Public', { exact: true }).selectOption({ label: 'Public' });
  await settled(page);
  expect(await page.locator('table.data tbody tr').count()).toBe(1);
  await filters.getByLabel('Public', { exact: true }).selectOption({ label: 'Any' });
  await filters.getByLabel('Links').selectOption({ label: 'In no group' });
  await settled(page);
  expect(await page.locator('table.data tbody tr td:first-child').allInnerTexts()).toEqual([`Biology\n${BIOLOGY}`, `Chemistry\n${CHEMISTRY}`]);
});

test('writes a membership rule and applies it to existing learners: the page says how many joined', async () => {
  await go(page, '#/rules');
  const form = page.getByRole('form', { name: 'New membership rule' });
  await form.getByLabel('Name').fill('Learn domain');
  await form.getByLabel('Domain').fill('Learn.Example.org');
  await form.getByLabel('Group').selectOption({ label: 'Cohort A' });
  await form.getByRole('button', { name: 'Create rule' }).click();
  await flashed(page, 'Rule “Learn domain” created: @learn.example.org → “Cohort A”.');
  const rules = (await rest.get('membership-rules/')).body.results;
  expect(rules).toEqual([{ id: expect.any(Number), name: 'Learn domain', domain: 'learn.example.org', group: { id: ids.a, name: 'Cohort A' } }]);

  await page.getByRole('button', { name: 'Apply rule Learn domain to existing learners…' }).click();
  expect(await dialogText(page)).toContain('Every active learner whose email ends in @learn.example.org and who is in no group joins “Cohort A”.');
  await page.getByRole('dialog').getByRole('button', { name: 'Apply rule' }).click();
  await flashed(page, '3 learners joined “Cohort A”.');
  const members = (await rest.get(`memberships/?group=${ids.a}`)).body.results.map((m: { user: { id: number } }) => m.user.id);
  expect(members.sort()).toEqual([101, 102, 104]);
  expect(await membershipOf(103)).toBeNull();

  // Edit: the row becomes a form; the new name is saved and shown.
  await page.getByRole('button', { name: 'Edit rule Learn domain' }).click();
  const edit = page.getByRole('form', { name: 'Edit rule Learn domain' });
  expect(await edit.getByLabel('Domain').inputValue()).toBe('learn.example.org');
  await edit.getByLabel('Name').fill('Learners');
  await edit.getByRole('button', { name: 'Save rule' }).click();
  await flashed(page, 'Rule “Learners” saved.');
  await settled(page);
  expect(await page.locator('td[data-label="Name"]').allInnerTexts()).toEqual(['Learners']);
  expect((await rest.get(`membership-rules/${rules[0].id}/`)).body).toMatchObject({ name: 'Learners', domain: 'learn.example.org', group: { id: ids.a } });
});

test('adds a learner to a group and moves another, after searching for them', async () => {
  await go(page, '#/users');
  await page.getByLabel('Group to add cy to').selectOption({ label: 'Cohort B' });
  await page.getByRole('button', { name: 'Add cy to the chosen group' }).click();
  await flashed(page, 'cy added to “Cohort B”.');
  expect(await membershipOf(103)).toBe(ids.b);

  const filters = page.getByRole('search', { name: 'Filter users' });
  await filters.getByLabel('Search').fill('ada');
  await filters.getByRole('button', { name: 'Search' }).click();
  await settled(page);
  expect(await page.locator('table.data tbody tr').count()).toBe(1);
  await page.getByLabel('Group to move ada to').selectOption({ label: 'Cohort B' });
  await page.getByRole('button', { name: 'Move ada to the chosen group' }).click();
  await flashed(page, 'ada moved to “Cohort B”.');
  expect(await membershipOf(101)).toBe(ids.b);

  // An exact email, in another case, finds its one learner; the page's URL never holds it.
  await filters.getByLabel('Search').fill('');
  await filters.getByLabel('Exact email').fill('BOB@learn.example.org');
  await filters.getByRole('button', { name: 'Search' }).click();
  await settled(page);
  expect(await page.locator('table.data tbody tr td[data-label="Email"]').allInnerTexts()).toEqual(['bob@learn.example.org']);
  expect(page.url()).toBe(`${service.baseUrl}/course_access_groups/console/#/users`);
});

test("a group's page: rename it, link a course, remove a member and add one back by email", async () => {
  await go(page, '#/groups');
  await page.getByRole('link', { name: 'Cohort B', exact: true }).click();
  // A link changes the hash; the group's page renders on the next task, so wait for it before `settled`.
  await page.getByRole('heading', { level: 1, name: 'Cohort B' }).waitFor();
  await settled(page);
  expect(await page.getByRole('table', { name: 'Members of Cohort B' }).locator('td[data-label="Email"]').allInnerTexts()).toEqual([
    'ada@learn.example.org',
    'cy@other.example.com',
  ]);
  const edit = page.getByRole('form', { name: 'Edit the group' });
  await edit.getByLabel('Name').fill('Cohort Beta');
  await edit.getByLabel('Description').fill('Moved learners');
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await flashed(page, 'Group saved.');
  expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('Cohort Beta');
  expect((await rest.get(`course-access-groups/${ids.b}/`)).body).toEqual({ id: ids.b, name: 'Cohort Beta', description: 'Moved learners' });

  const link = page.getByRole('form', { name: 'Link a course' });
  await link.getByLabel('Course id').fill(CHEMISTRY);
  await link.getByRole('button', { name: 'Link course' }).click();
  await flashed(page, 'Course linked to “Cohort Beta”.');
  await page.getByRole('button', { name: 'Unlink Chemistry from the group' }).waitFor();
  expect((await rest.get(`courses/?group=${ids.b}`)).body.results.map((c: { id: string }) => c.id)).toEqual([CHEMISTRY]);

  await page.getByRole('button', { name: 'Remove cy from the group…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
  await flashed(page, 'cy removed from “Cohort Beta”.');
  expect(await membershipOf(103)).toBeNull();

  const add = page.getByRole('form', { name: 'Add a member' });
  await add.getByLabel('User id or email').fill('CY@other.example.com');
  await add.getByRole('button', { name: 'Add member' }).click();
  await flashed(page, 'cy added to “Cohort Beta”.');
  expect(await membershipOf(103)).toBe(ids.b);
});

test('checks access for a member and a non-member: the decision and its reason are shown', async () => {
  await go(page, '#/access');
  const form = page.getByRole('form', { name: 'Access check' });
  const ask = async (user: string, course: string) => {
    await form.getByLabel("Learner's user id").fill(user);
    await form.getByLabel('Course id').fill(course);
    await form.getByLabel('Action').selectOption('course.enroll');
    await form.getByRole('button', { name: 'Check access' }).click();
    const decision = page.getByRole('region', { name: 'Decision' });
    await decision.waitFor();
    await page.waitForFunction((u) => document.querySelector('.decision')?.textContent?.includes(`#${u}`), user);
    return decision.innerText();
  };
  const member = await ask('102', ALGEBRA);
  expect(member).toMatch(/Allowed[\s\S]*Reason: group — The learner is a member of a group linked to this course\./);
  expect((await rest.get(`access/?course_id=${encodeURIComponent(ALGEBRA)}&action=course.enroll&user_id=102`)).body).toEqual({
    allowed: true,
    reason: 'group',
  });

  const outsider = await ask('103', ALGEBRA);
  expect(outsider).toMatch(/Denied[\s\S]*Reason: no_access/);
  expect((await rest.get(`access/?course_id=${encodeURIComponent(ALGEBRA)}&action=course.enroll&user_id=103`)).body).toEqual({
    allowed: false,
    reason: 'no_access',
  });

  expect(await ask('103', BIOLOGY)).toMatch(/Allowed[\s\S]*Reason: public/);
});

test('deletes a group: the confirmation counts the memberships, rules and links that go with it', async () => {
  await go(page, '#/groups');
  await page.getByRole('button', { name: 'Delete group Cohort A…' }).click();
  expect(await dialogText(page)).toContain('This also deletes 2 memberships, 1 membership rule and 1 course link.');
  await page.getByRole('dialog').getByRole('button', { name: 'Delete group' }).click();
  await flashed(page, 'Group “Cohort A” deleted.');
  await settled(page);
  expect(await page.getByRole('link', { name: 'Cohort A', exact: true }).count()).toBe(0);
  expect((await rest.get(`course-access-groups/${ids.a}/`)).status).toBe(404);
  expect((await rest.get(`memberships/?group=${ids.a}`)).body.count).toBe(0);
  expect((await rest.get('membership-rules/')).body.count).toBe(0);
  expect((await rest.get(`courses/?group=${ids.a}`)).body.count).toBe(0);
  expect(await membershipOf(102)).toBeNull();
});

test('turns the flag off after a confirmation that says every learner will see every course', async () => {
  await go(page, '#/overview');
  await page.getByRole('button', { name: 'Turn off course access groups…' }).click();
  const text = await dialogText(page);
  expect(text).toContain('Every learner of org-a will see and may enroll in every course.');
  expect(text).toContain('Groups, links and rules are kept');
  await page.getByRole('dialog').getByRole('button', { name: 'Turn off' }).click();
  await flashed(page, 'Course access groups are off.');
  expect((await rest.get('site-configuration/')).body).toEqual({ ENABLE_COURSE_ACCESS_GROUPS: false });
});

test('no dialog, script error or CSP violation happened; no token or email reached a log line', async () => {
  expect(watched.dialogs).toEqual([]);
  expect(watched.errors).toEqual([]);
  expect(await watched.violations()).toEqual([]);
  const logs = service.logs.join('\n');
  expect(service.logs.filter((l) => l.includes('"msg":"request"')).length).toBeGreaterThan(50);
  expect(logs).not.toContain(token.split('.')[2]);
  for (const [, , email] of USERS) expect(logs.toLowerCase()).not.toContain(email);
  expect(logs).not.toContain('email_exact');
});
