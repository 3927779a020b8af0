// docs/console.md and docs/api.md in the browser: field errors beside their fields with nothing written, one
// organization's administrator seeing nothing of another's, tokens that expire or are refused,
// hostile names shown as text, and a group created with the keyboard alone.
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  dialogGone,
  dialogText,
  fieldErrorText,
  flashed,
  focused,
  go,
  launchBrowser,
  openConsole,
  type PageWatch,
  pasteToken,
  settled,
  watch,
} from '../helpers/browser';
import { client } from '../helpers/http';
import { seeder, snapshot } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { learnerToken, token as signToken, siteAdminToken, staffToken } from '../helpers/tokens';

// Browser globals used inside page.evaluate callbacks (the Node program has no DOM types).
declare const document: any;
declare const sessionStorage: any;

const SCRIPT = '<script>alert(1)</script>';
const IMG = '"><img src=x onerror=alert(1)>';
const A_COURSE = 'course-v1:org-a+SAFE+1';
const XSS_COURSE = 'course-v1:org-a+XSS+1';

let service: TestService;
let browser: Browser;
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;
const contexts: BrowserContext[] = [];
const watches: PageWatch[] = [];
const groups: Record<string, number> = {};

// The LMS's signing key: the service trusts its tokens too (docs/api.md, the LMS's tokens).
const lmsKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const LMS_ISSUER = 'http://lms.console.test/oauth2';
/** A token shaped as the LMS's (oauth_dispatch/jwt.py _create_jwt; lms-jwt.test.ts proves the shape against its decoder). */
const lmsToken = (claims: Record<string, unknown>) =>
  new SignJWT({ version: '1.2.0', is_restricted: false, filters: [], scopes: ['user_id', 'email', 'profile'], administrator: false, ...claims })
    .setProtectedHeader({ alg: 'RS512' })
    .setIssuer(LMS_ISSUER)
    .setAudience('openedx')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(lmsKey.privateKey);

/** The service's trust in the LMS's tokens (its issuer and key set). */
const LMS_TRUST = {
  LMS_JWT_ISSUERS: JSON.stringify([{ ISSUER: LMS_ISSUER, AUDIENCE: 'openedx' }]),
  LMS_JWT_PUBLIC_SIGNING_JWK_SET: JSON.stringify({ keys: [{ kid: 'openedx', ...lmsKey.publicKey.export({ format: 'jwk' }) }] }),
};
/** The console's sign-in through the LMS: with it, a pasted LMS token is traded for the console's own (no LMS is contacted for that). */
const PUBLIC_URL = 'http://console-guard.test';
const LMS_SIGN_IN = {
  PUBLIC_URL,
  LMS_OAUTH_URL: 'http://lms.console.test',
  LMS_OAUTH_CLIENT_ID: 'console',
  LMS_OAUTH_CLIENT_SECRET: 'the-console-client-secret-of-this-test',
};
const CONSOLE_ISSUER = `${PUBLIC_URL}/course_access_groups/console`;

/** The claims of the token the tab keeps. */
const keptClaims = async (page: Page): Promise<Record<string, unknown>> => {
  const kept: string = await page.evaluate(() => sessionStorage.getItem('cag-console-token'));
  return JSON.parse(Buffer.from(kept.split('.')[1]!, 'base64url').toString());
};

beforeAll(async () => {
  service = await startTestService({ ...LMS_TRUST, ...LMS_SIGN_IN });
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  b = client(service.baseUrl, await siteAdminToken('org-b'));
  const seedA = seeder(service.db, 'org-a');
  await seedA.user(301, { username: 'alice', name: 'Alice of A', email: 'alice@a.example.com' });
  await seedA.user(302, { username: IMG, name: SCRIPT, email: 'x@a.example.com' });
  await seedA.course(A_COURSE, 'Secret course of A');
  await seedA.course(XSS_COURSE, IMG);
  const seedB = seeder(service.db, 'org-b');
  await seedB.user(401, { username: 'bruno', name: 'Bruno of B', email: 'bruno@b.example.com' });
  await seedB.course('course-v1:org-b+B1+1', 'Course of B');
  for (const [key, api, name] of [
    ['secret', a, 'Secret group of A'],
    ['script', a, SCRIPT],
    ['img', a, IMG],
    ['b', b, 'Group of B'],
  ] as const) {
    groups[key] = (await api.post('course-access-groups/', { name, description: key === 'script' ? IMG : '' })).body.id;
  }
  expect((await a.post('membership-rules/', { name: SCRIPT, domain: 'a.example.com', group: groups.script })).status).toBe(201);
  expect((await a.post('memberships/', { user: 302, group: groups.script })).status).toBe(201);
  expect((await a.post('group-courses/', { course: XSS_COURSE, group: groups.img })).status).toBe(201);
  browser = await launchBrowser();
}, 60000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

/** A fresh browser context (its own sessionStorage) with one watched page. */
async function newPage(width = 1280): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  watches.push(await watch(page));
  return page;
}

/** Runs a refused action in the page and checks the database did not change. */
async function withoutWrites(action: () => Promise<void>): Promise<void> {
  const before = await snapshot(service.db);
  await action();
  expect(await snapshot(service.db)).toEqual(before);
}

describe('field errors appear next to their fields and nothing is written', () => {
  let page: Page;
  beforeAll(async () => {
    page = await newPage();
    await openConsole(page, service.baseUrl, await siteAdminToken('org-a'));
  });

  test('a group with an empty name', async () => {
    await go(page, '#/groups');
    await withoutWrites(async () => {
      await page.getByRole('form', { name: 'New group' }).getByRole('button', { name: 'Create group' }).click();
      await page.locator('[aria-invalid="true"]').waitFor();
    });
    expect(await fieldErrorText(page, 'New group', 'name')).toBe('This field may not be blank.');
    expect(await focused(page)).toBe('Name');
    expect(await page.getByRole('form', { name: 'New group' }).getByLabel('Name').getAttribute('aria-describedby')).toMatch(/-error$/);
  });

  test('a rule with a bad domain and no group: both fields say why', async () => {
    await go(page, '#/rules');
    const form = page.getByRole('form', { name: 'New membership rule' });
    await form.getByLabel('Name').fill('Bad');
    await form.getByLabel('Domain').fill('@example.com');
    await withoutWrites(async () => {
      await form.getByRole('button', { name: 'Create rule' }).click();
      await form.locator('.field[data-field="group"] .field-error:not(:empty)').waitFor();
    });
    expect(await fieldErrorText(page, 'New membership rule', 'domain')).toBe('Enter a valid domain name, such as example.com.');
    expect(await fieldErrorText(page, 'New membership rule', 'group')).toBe('This field is required.');
    expect(await fieldErrorText(page, 'New membership rule', 'name')).toBe('');
  });

  test('a duplicate rule: the domain already has one', async () => {
    const form = page.getByRole('form', { name: 'New membership rule' });
    await form.getByLabel('Domain').fill('A.example.com');
    await form.getByLabel('Group').selectOption({ label: 'Secret group of A' });
    await withoutWrites(async () => {
      await form.getByRole('button', { name: 'Create rule' }).click();
      await page.waitForFunction(() => document.querySelector('.field[data-field="domain"] .field-error')?.textContent?.includes('already'));
    });
    expect(await fieldErrorText(page, 'New membership rule', 'domain')).toBe('A membership rule for this domain already exists.');
    expect(await fieldErrorText(page, 'New membership rule', 'group')).toBe('');
    expect((await a.get('membership-rules/')).body.count).toBe(1);
  });

  test('a member who does not exist, and an access check with a bad user id and an unknown course', async () => {
    await go(page, `#/groups/${groups.secret}`);
    const add = page.getByRole('form', { name: 'Add a member' });
    await add.getByLabel('User id or email').fill('999');
    await withoutWrites(async () => {
      await add.getByRole('button', { name: 'Add member' }).click();
      await add.locator('[aria-invalid="true"]').waitFor();
    });
    expect(await fieldErrorText(page, 'Add a member', 'user')).toBe('Invalid pk "999" - object does not exist.');
    await add.getByLabel('User id or email').fill('nobody@a.example.com');
    await add.getByRole('button', { name: 'Add member' }).click();
    await page.waitForFunction(() => document.querySelector('.field[data-field="user"] .field-error')?.textContent?.includes('email'));
    expect(await fieldErrorText(page, 'Add a member', 'user')).toBe('No user of this organization has this email.');

    await go(page, '#/access');
    const check = page.getByRole('form', { name: 'Access check' });
    await check.getByLabel("Learner's user id").fill('abc');
    await check.getByLabel('Course id').fill(A_COURSE);
    await check.getByRole('button', { name: 'Check access' }).click();
    await check.locator('[aria-invalid="true"]').waitFor();
    expect(await fieldErrorText(page, 'Access check', 'user_id')).toBe('A valid integer is required.');
    await check.getByLabel("Learner's user id").fill('301');
    await check.getByLabel('Course id').fill('course-v1:nowhere+X+1');
    await check.getByRole('button', { name: 'Check access' }).click();
    await page.waitForFunction(() => document.querySelector('.field[data-field="course_id"] .field-error')?.textContent !== '');
    expect(await fieldErrorText(page, 'Access check', 'course_id')).toBe('No course with this id in your organization.');
    expect(await page.getByRole('region', { name: 'Decision' }).isHidden()).toBe(true);
  });
});

test('names with <script> and <img onerror> are shown as written, and no dialog fires', async () => {
  const page = await newPage();
  const watched = watches[watches.length - 1]!;
  await openConsole(page, service.baseUrl, await siteAdminToken('org-a'));
  await go(page, '#/groups');
  await page.getByRole('link', { name: SCRIPT, exact: true }).waitFor();
  await page.getByRole('link', { name: IMG, exact: true }).waitFor();
  expect(await page.getByRole('table', { name: 'Groups' }).innerText()).toContain(`${SCRIPT}\t${IMG}`);

  await page.getByRole('button', { name: `Delete group ${SCRIPT}…` }).click();
  expect(await dialogText(page)).toContain(`Delete the group “${SCRIPT}”?`);
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

  await go(page, '#/users');
  expect(await page.locator('td[data-label="User"]').allInnerTexts()).toContain(`${SCRIPT}\n${IMG} · #302`);
  await go(page, '#/courses');
  expect(await page.locator('td[data-label="Course"]').allInnerTexts()).toContain(`${IMG}\n${XSS_COURSE}`);
  await page.getByRole('button', { name: `Unlink ${IMG} from ${IMG}` }).waitFor();
  await go(page, '#/rules');
  expect(await page.locator('td[data-label="Name"]').allInnerTexts()).toEqual([SCRIPT]);
  await go(page, `#/groups/${groups.script}`);
  expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe(SCRIPT);
  expect(await page.getByRole('form', { name: 'Edit the group' }).getByLabel('Description').inputValue()).toBe(IMG);
  expect(await page.locator('td[data-label="User"]').allInnerTexts()).toEqual([`${IMG} #302`]);
  expect(await page.title()).toBe(`${SCRIPT} · Course Access Groups console`);

  expect(await page.locator('img').count()).toBe(0);
  expect(await page.locator('body script').count()).toBe(0);
  expect(watched.dialogs).toEqual([]);
  expect(watched.errors).toEqual([]);
  expect(await watched.violations()).toEqual([]);
});

test('an administrator of organization B sees nothing of organization A', async () => {
  const page = await newPage();
  await openConsole(page, service.baseUrl, await siteAdminToken('org-b'));
  const seen: string[] = [];
  const look = async () => seen.push(await page.locator('body').innerText());
  expect(await page.locator('.stats').innerText()).toMatch(/Groups\s+1\s+Courses\s+1[\s\S]*Users\s+1[\s\S]*Membership rules\s+0/);
  await look();
  for (const hash of ['#/groups', '#/users', '#/courses', '#/rules']) {
    await go(page, hash);
    await look();
  }
  await go(page, '#/groups');
  expect(await page.locator('table.data tbody tr').count()).toBe(1);
  await go(page, '#/users');
  const filters = page.getByRole('search', { name: 'Filter users' });
  await filters.getByLabel('Search').fill('alice');
  await filters.getByRole('button', { name: 'Search' }).click();
  await settled(page);
  expect(await page.locator('.list-status').innerText()).toBe('No user matches.');
  await go(page, `#/groups/${groups.secret}`);
  await page.getByRole('heading', { name: 'Group not found' }).waitFor();
  await look();
  await go(page, '#/access');
  const check = page.getByRole('form', { name: 'Access check' });
  await check.getByLabel('Course id').fill(A_COURSE);
  await check.getByRole('button', { name: 'Check access' }).click();
  await check.locator('[aria-invalid="true"]').waitFor();
  expect(await fieldErrorText(page, 'Access check', 'course_id')).toBe('No course with this id in your organization.');
  await look();
  const text = seen.join('\n');
  expect(text).toContain('Group of B');
  expect(text).toContain('bruno@b.example.com');
  for (const word of ['Secret', 'alice', 'Alice', 'a.example.com', SCRIPT, IMG, 'org-a']) expect(text).not.toContain(word);
});

describe('tokens', () => {
  const signInMessage = (page: Page) => page.locator('.signin > p.flash').innerText();

  test('an expired token pasted is refused, saying so; nothing is stored', async () => {
    const page = await newPage();
    const expired = await signToken({ user_id: 2, org: 'org-a', roles: ['site_admin'] }, { exp: Math.floor(Date.now() / 1000) - 60 });
    await pasteToken(page, service.baseUrl, expired);
    const form = page.getByRole('form', { name: 'Sign in' });
    await form.locator('[aria-invalid="true"]').waitFor();
    expect(await fieldErrorText(page, 'Sign in', 'token')).toMatch(/^Your token expired at .+\. Sign in again with a new one\.$/);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  test('a #token= link signs nothing in, even with a good token: it leaves the address bar unread', async () => {
    const page = await newPage();
    const good = await siteAdminToken('org-a', 7);
    const calls: string[] = [];
    page.on('request', (r) => calls.push(r.url()));
    await page.goto(`${service.baseUrl}/course_access_groups/console/#token=${good}`);
    await page.locator('.signin > p.flash').waitFor();
    expect(await signInMessage(page)).toBe('Sign-in links are not accepted: sign in here.');
    expect(page.url()).not.toContain(good);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(calls.filter((u) => u.includes('/api/v1/'))).toEqual([]);
  });

  test('a token that expires while the console is open returns to sign-in', async () => {
    const page = await newPage();
    // The page's clock is Playwright's, so the expiry is reached by moving it on, not by a race
    // between a short token and a loaded machine (a 3 s token once expired before sign-in ended).
    await page.clock.install();
    const short = await signToken({ user_id: 2, org: 'org-a', roles: ['site_admin'] }, { exp: Math.floor(Date.now() / 1000) + 25 });
    await openConsole(page, service.baseUrl, short);
    expect(await page.locator('.who').innerText()).toContain('in less than a minute');
    await page.clock.fastForward(26_000);
    await page.locator('.signin').waitFor();
    expect(await signInMessage(page)).toMatch(/^Your token expired at /);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  test('a token the service refuses (401) returns to sign-in with its reason; a pasted good token signs in', async () => {
    const page = await newPage();
    const forged = await signToken({ user_id: 2, org: 'org-a', roles: ['site_admin'] }, { secret: 'another-secret-that-is-long-enough' });
    await pasteToken(page, service.baseUrl, forged);
    await page.locator('.signin > p.flash').waitFor();
    expect(await signInMessage(page)).toBe('The service ended your session (Invalid token.). Sign in again.');

    const form = page.getByRole('form', { name: 'Sign in' });
    await form.getByLabel('Access token').fill(await learnerToken('org-a'));
    await form.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForFunction(() => document.querySelector('.signin > p.flash')?.textContent?.includes('neither'));
    expect(await signInMessage(page)).toBe('This token is neither a site administrator’s nor platform staff’s; the console cannot use it.');

    await form.getByLabel('Access token').fill('not a token');
    await form.getByRole('button', { name: 'Sign in' }).click();
    await form.locator('[aria-invalid="true"]').waitFor();
    expect(await fieldErrorText(page, 'Sign in', 'token')).toBe('This is not a token: a JWT is three parts separated by dots.');

    await form.getByLabel('Access token').fill(`Bearer ${await siteAdminToken('org-a', 7)}`);
    await form.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    expect(await page.locator('.who').innerText()).toContain('User 7');
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await signInMessage(page)).toBe('You signed out.');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  test('platform staff choose the organization; every call names it', async () => {
    const page = await newPage();
    const calls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/')) calls.push(r.url());
    });
    await pasteToken(page, service.baseUrl, await staffToken(9));
    await page.getByRole('heading', { name: 'Choose an organization' }).waitFor();
    expect(await page.locator('.who').innerText()).toContain('platform staff');
    const picker = page.getByRole('form', { name: 'Organization' });
    await picker.getByRole('textbox', { name: 'Organization' }).fill('org-b');
    await picker.getByRole('button', { name: 'Switch organization' }).click();
    await settled(page);
    await go(page, '#/groups');
    expect(await page.locator('table.data tbody td[data-label="Name"]').allInnerTexts()).toEqual(['Group of B']);
    expect(calls.length).toBeGreaterThan(5);
    for (const url of calls) expect(new URL(url).searchParams.get('organization_uuid')).toBe('org-b');
  });

  test("the LMS's own token: an administrator of two organizations picks one of theirs; every call names it", async () => {
    const page = await newPage();
    const calls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/')) calls.push(r.url());
    });
    const roles = ['course_access_groups_admin:org-a', 'course_access_groups_admin:org-b'];
    const pasted = await lmsToken({ user_id: 12, roles });
    await pasteToken(page, service.baseUrl, pasted);
    await page.getByRole('heading', { name: 'Choose an organization' }).waitFor();
    // The tab keeps the console's own token, traded for the LMS's, which it never stored.
    expect(await keptClaims(page)).toMatchObject({ iss: CONSOLE_ISSUER, aud: CONSOLE_ISSUER, user_id: 12, roles });
    expect(await page.evaluate(() => JSON.stringify(Object.entries(sessionStorage)))).not.toContain(pasted.split('.')[2]);
    expect(await page.locator('main').innerText()).toContain('You administer org-a, org-b');
    const picker = page.getByRole('form', { name: 'Organization' });
    // A list of their own organizations, not a free field (staff's).
    expect(await picker.getByRole('combobox', { name: 'Organization' }).locator('option').allInnerTexts()).toEqual(['Choose one…', 'org-a', 'org-b']);
    await picker.getByRole('combobox', { name: 'Organization' }).selectOption('org-b');
    await picker.getByRole('button', { name: 'Switch organization' }).click();
    await settled(page);
    await go(page, '#/groups');
    expect(await page.locator('table.data tbody td[data-label="Name"]').allInnerTexts()).toEqual(['Group of B']);
    expect(calls.length).toBeGreaterThan(5);
    for (const url of calls) expect(new URL(url).searchParams.get('organization_uuid')).toBe('org-b');
  });

  test("the LMS's own token: an administrator of one organization works in it, with no choice to make", async () => {
    const page = await newPage();
    await openConsole(page, service.baseUrl, await lmsToken({ user_id: 13, roles: ['course_access_groups_admin:org-a'] }));
    expect(await keptClaims(page)).toMatchObject({ iss: CONSOLE_ISSUER, user_id: 13 });
    expect(await page.locator('.who').innerText()).toContain('site administrator of org-a');
    expect(await page.getByRole('form', { name: 'Organization' }).count()).toBe(0);
    await go(page, '#/groups');
    expect(await page.locator('table.data tbody td[data-label="Name"]').allInnerTexts()).toContain('Secret group of A');
  });

  test("the LMS's own token of someone who administers nothing here: refused with the service's reason, nothing kept", async () => {
    const page = await newPage();
    await pasteToken(page, service.baseUrl, await lmsToken({ user_id: 14, roles: [] }));
    await page.getByRole('form', { name: 'Sign in' }).locator('[aria-invalid="true"]').waitFor();
    expect(await fieldErrorText(page, 'Sign in', 'token')).toMatch(/^Your LMS account \(user 14\) administers no organization in Course Access Groups/);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  test("while config.json cannot be read (a proxy's 502 during a deploy) a pasted token is kept by no one; once it answers, the LMS's is traded", async () => {
    // Not watched for console errors: the browser logs the 502 this test makes. Script errors are still checked.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    const scriptErrors: string[] = [];
    page.on('pageerror', (e) => scriptErrors.push(e.message));
    let down = true;
    await page.route('**/course_access_groups/console/config.json', (route) => (down ? route.fulfill({ status: 502, body: 'Bad gateway' }) : route.continue()));
    const pasted = await lmsToken({ user_id: 15, roles: ['course_access_groups_admin:org-a'] });
    await pasteToken(page, service.baseUrl, pasted);
    await page.getByRole('form', { name: 'Sign in' }).locator('[aria-invalid="true"]').waitFor();
    expect(await fieldErrorText(page, 'Sign in', 'token')).toBe('The service cannot be reached. Check the connection and try again.');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    down = false;
    const form = page.getByRole('form', { name: 'Sign in' });
    await form.getByLabel('Access token').fill(pasted);
    await form.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    expect(await keptClaims(page)).toMatchObject({ iss: CONSOLE_ISSUER, user_id: 15 });
    expect(scriptErrors).toEqual([]);
  });

  test('without the sign-in through the LMS the service cannot trade an LMS token: the console refuses to keep it and says why', async () => {
    const lmsOnly = await startTestService(LMS_TRUST);
    try {
      const page = await newPage();
      await pasteToken(page, lmsOnly.baseUrl, await lmsToken({ user_id: 13, roles: ['course_access_groups_admin:org-a'] }));
      await page.getByRole('form', { name: 'Sign in' }).locator('[aria-invalid="true"]').waitFor();
      expect(await fieldErrorText(page, 'Sign in', 'token')).toBe(
        'This is the LMS’s own token, which opens every Open edX service: the console does not keep it. Sign in with the LMS (the service’s LMS_OAUTH_* settings), or paste a token of this service’s own keys.',
      );
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      // A token of the service's own keys is still kept as it is.
      await openConsole(page, lmsOnly.baseUrl, await siteAdminToken('org-a'));
      expect(await page.locator('.who').innerText()).toContain('site administrator of org-a');
    } finally {
      await lmsOnly.close();
    }
  });
});

test('keyboard only: go to Groups, create a group, open and cancel its deletion, then delete it', async () => {
  const page = await newPage();
  await openConsole(page, service.baseUrl, await siteAdminToken('org-a'));
  const tabTo = async (name: string, limit = 30) => {
    for (let i = 0; i < limit; i++) {
      await page.keyboard.press('Tab');
      if ((await focused(page)) === name) return;
    }
    throw new Error(`"${name}" never got the focus`);
  };
  await tabTo('Groups');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.activeElement?.tagName === 'H1' && document.activeElement.textContent === 'Groups');
  await settled(page);
  await page.keyboard.press('Tab');
  expect(await focused(page)).toBe('Name');
  await page.keyboard.type('Made by keyboard');
  await page.keyboard.press('Tab');
  expect(await focused(page)).toBe('Description');
  await page.keyboard.type('No mouse was used');
  await page.keyboard.press('Tab');
  expect(await focused(page)).toBe('Create group');
  await page.keyboard.press('Enter');
  await flashed(page, 'Group “Made by keyboard” created.');
  const made = (await a.get('course-access-groups/?limit=100')).body.results.find((g: { name: string }) => g.name === 'Made by keyboard');
  expect(made).toEqual({ id: expect.any(Number), name: 'Made by keyboard', description: 'No mouse was used' });

  await settled(page);
  await tabTo('Delete group Made by keyboard…');
  await page.keyboard.press('Enter');
  await page.getByRole('dialog').waitFor();
  expect(await focused(page)).toBe('Cancel');
  await page.keyboard.press('Escape');
  await dialogGone(page);
  expect(await focused(page)).toBe('Delete group Made by keyboard…');
  expect((await a.get(`course-access-groups/${made.id}/`)).status).toBe(200);

  await page.keyboard.press('Enter');
  await page.getByRole('dialog').waitFor();
  await page.keyboard.press('Tab');
  expect(await focused(page)).toBe('Delete group');
  await page.keyboard.press('Enter');
  await flashed(page, 'Group “Made by keyboard” deleted.');
  expect((await a.get(`course-access-groups/${made.id}/`)).status).toBe(404);
});

test('no page of this file saw a dialog, a script error or a CSP violation', async () => {
  expect(watches.length).toBeGreaterThan(5);
  for (const w of watches) {
    expect(w.dialogs).toEqual([]);
    expect(w.errors).toEqual([]);
    expect(await w.violations()).toEqual([]);
  }
});
