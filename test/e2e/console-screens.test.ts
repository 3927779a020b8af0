// Every console page at 1280 px and 390 px: nothing wider than the window, and a screenshot of
// each under .artifacts/screenshots/ (git-ignored) to look at; the README shows two of them.

import { statSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { CONSOLE_PATH, dialogGone, go, launchBrowser, openConsole, type PageWatch, screenshot, settled, watch } from '../helpers/browser';
import { client } from '../helpers/http';
import { seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

declare const document: any;

const ORG = 'org-a';
const GROUPS = ['Nursing 2025', 'Engineering cohort', 'Partners: Acme', 'Staff onboarding', 'Evening classes', 'Alumni'];
const PEOPLE = [
  'Ada Lovelace',
  'Grace Hopper',
  'Alan Turing',
  'Katherine Johnson',
  'Edsger Dijkstra',
  'Barbara Liskov',
  'Donald Knuth',
  'Frances Allen',
  'Ken Thompson',
  'Radia Perlman',
  'John Backus',
  'Margaret Hamilton',
  'Tim Berners-Lee',
  'Hedy Lamarr',
  'Claude Shannon',
  'Annie Easley',
  'Dennis Ritchie',
  'Jean Bartik',
  'Niklaus Wirth',
  'Mary Keller',
  'Vint Cerf',
  'Adele Goldberg',
  'Leslie Lamport',
  'Shafi Goldwasser',
];
const COURSES = [
  'Anatomy I',
  'Pharmacology',
  'Statics',
  'Thermodynamics',
  'Contract law',
  'Safety at work',
  'Spanish for beginners',
  'Data analysis',
  'Leadership',
  'Ethics',
  'Welcome week',
  'Python basics',
];

let service: TestService;
let browser: Browser;
let page: Page;
let watched: PageWatch;
let token: string;
const groupIds: number[] = [];

beforeAll(async () => {
  service = await startTestService();
  token = await siteAdminToken(ORG, 2);
  const rest = client(service.baseUrl, token);
  const seed = seeder(service.db, ORG);
  for (const [i, name] of PEOPLE.entries()) {
    const username = name.toLowerCase().replace(/[^a-z]+/g, '.');
    const domain = i % 3 === 0 ? 'nursing.example.edu' : i % 3 === 1 ? 'eng.example.edu' : 'acme.example.com';
    await seed.user(500 + i, { username, name, email: `${username}@${domain}` });
  }
  for (const [i, name] of COURSES.entries()) await seed.course(`course-v1:org-a+C${100 + i}+2025`, name);
  for (const name of GROUPS) groupIds.push((await rest.post('course-access-groups/', { name, description: `Learners of ${name.toLowerCase()}` })).body.id);
  const ok = (res: { status: number }) => expect(res.status).toBe(201);
  ok(await rest.post('membership-rules/', { name: 'Nursing school', domain: 'nursing.example.edu', group: groupIds[0] }));
  ok(await rest.post('membership-rules/', { name: 'Engineering school', domain: 'eng.example.edu', group: groupIds[1] }));
  ok(await rest.post('membership-rules/', { name: 'Acme employees', domain: 'acme.example.com', group: groupIds[2] }));
  for (let i = 0; i < 14; i++) ok(await rest.post('memberships/', { user: 500 + i, group: groupIds[i % 3] }));
  for (let i = 0; i < 9; i++) ok(await rest.post('group-courses/', { course: `course-v1:org-a+C${100 + i}+2025`, group: groupIds[Math.floor(i / 3)] }));
  ok(await rest.post('group-courses/', { course: 'course-v1:org-a+C105+2025', group: groupIds[3] }));
  ok(await rest.post('public-courses/', { course: 'course-v1:org-a+C110+2025' }));
  ok(await rest.post('public-courses/', { course: 'course-v1:org-a+C111+2025' }));
  expect((await rest.patch('site-configuration/', { ENABLE_COURSE_ACCESS_GROUPS: true })).status).toBe(200);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watched = await watch(page);
}, 90000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

const PAGES: [string, string][] = [
  ['overview', '#/overview'],
  ['groups', '#/groups'],
  ['group', '#/groups/1'],
  ['courses', '#/courses'],
  ['users', '#/users'],
  ['rules', '#/rules'],
  ['access', '#/access'],
];

/** How much wider than the window the page is (0: it fits). */
const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

describe.each([1280, 390])('at %i px', (width) => {
  beforeAll(async () => {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    if (width === 1280) await openConsole(page, service.baseUrl, token);
  });

  test.each(PAGES)('%s fits the width; screenshot taken', async (name, hash) => {
    await go(page, hash === '#/groups/1' ? `#/groups/${groupIds[0]}` : hash);
    if (name === 'access') {
      const form = page.getByRole('form', { name: 'Access check' });
      await form.getByLabel("Learner's user id").fill('500');
      await form.getByLabel('Course id').fill('course-v1:org-a+C100+2025');
      await form.getByRole('button', { name: 'Check access' }).click();
      await page.getByRole('region', { name: 'Decision' }).waitFor();
    }
    await settled(page);
    expect(await page.locator('table.data, .stats, .decision').count()).toBeGreaterThan(0);
    expect(await overflow()).toBe(0);
    const file = await screenshot(page, `${name}-${width}`);
    expect(statSync(file).size).toBeGreaterThan(5000);
  });

  test('a confirmation dialog fits the width', async () => {
    await go(page, '#/groups');
    await page.getByRole('button', { name: `Delete group ${GROUPS[0]}…` }).click();
    expect(await page.getByRole('dialog').innerText()).toContain('This also deletes 5 memberships, 1 membership rule and 3 course links.');
    await page.getByRole('dialog').waitFor();
    const box = (await page.getByRole('dialog').boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(width);
    await screenshot(page, `dialog-${width}`, { fullPage: false });
    await page.keyboard.press('Escape');
    await dialogGone(page);
  });

  test('the sign-in page fits the width', async () => {
    const signIn = await browser.newPage({ viewport: { width, height: 844 } });
    await signIn.goto(`${service.baseUrl}${CONSOLE_PATH}`);
    await signIn.getByRole('form', { name: 'Sign in' }).waitFor();
    expect(await signIn.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
    await screenshot(signIn, `signin-${width}`);
    await signIn.close();
  });
});

test('a list pages through its count: 24 users are 20, then 4', async () => {
  await go(page, '#/users');
  const summary = page.locator('.pager-summary');
  expect(await summary.innerText()).toBe('1–20 of 24 users');
  expect(await page.locator('table.data tbody tr').count()).toBe(20);
  expect(await page.getByRole('button', { name: 'Previous page of users' }).isDisabled()).toBe(true);
  await page.getByRole('button', { name: 'Next page of users' }).click();
  await page.waitForFunction(() => document.querySelector('.pager-summary')?.textContent === '21–24 of 24 users');
  expect(await page.locator('td[data-label="User"]').first().innerText()).toContain('#520');
  expect(await page.locator('table.data tbody tr').count()).toBe(4);
  expect(await page.getByRole('button', { name: 'Next page of users' }).isDisabled()).toBe(true);
  await page.getByRole('button', { name: 'Previous page of users' }).click();
  await page.waitForFunction(() => document.querySelector('.pager-summary')?.textContent === '1–20 of 24 users');
});

test('no dialog, script error or CSP violation on the way', async () => {
  expect(watched.dialogs).toEqual([]);
  expect(watched.errors).toEqual([]);
  expect(await watched.violations()).toEqual([]);
});
