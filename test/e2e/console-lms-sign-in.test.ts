// docs/console.md, "Signing in through the LMS", in Chromium: from the LMS's link to a signed-in
// console with no token typed or minted by hand. The LMS is the stand-in of test/lms-oauth (the
// LMS's django-oauth-toolkit 1.7.1; its token view mints as edx-platform's AccessTokenView does),
// reached by the browser as lms.localhost (another host than the service, as in production) and
// by the service at 127.0.0.1 (LMS_OAUTH_INTERNAL_URL, as Tutor's http://lms:8000).
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CONSOLE_PREFIX } from '../../src/console/route';
import { launchBrowser, type PageWatch, settled, watch } from '../helpers/browser';
import { client } from '../helpers/http';
import { LMS_CLIENT_ID, LMS_CLIENT_SECRET, LMS_PASSWORD, type LmsStandIn, startLmsStandIn } from '../helpers/lms-stand-in';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

// Browser globals used inside page.evaluate callbacks (the Node program has no DOM types).
declare const sessionStorage: any;
declare const localStorage: any;
declare const location: any;
declare const document: any;
declare const window: any;
declare const history: any;
declare const performance: any;

// Ports of this file's block: the service's PUBLIC_URL is in the LMS's registered redirect URI.
const SERVICE_PORT = 8211;
const LMS_PORT = 8212;
const PUBLIC_URL = `http://127.0.0.1:${SERVICE_PORT}`;
const LMS_BROWSER_URL = `http://lms.localhost:${LMS_PORT}`;

let lms: LmsStandIn;
let lmsIssuer: string;
let service: TestService;
let browser: Browser;
const contexts: BrowserContext[] = [];
const watches: PageWatch[] = [];

beforeAll(async () => {
  lms = await startLmsStandIn({
    port: LMS_PORT,
    redirectUris: [`${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/callback`],
    consoleLoginUrl: `${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/login`,
    // The LMS's LOGIN_REDIRECT_WHITELIST: its /logout may send the browser back to the console.
    redirectWhitelist: [`127.0.0.1:${SERVICE_PORT}`],
  });
  service = await startTestService({
    PORT: String(SERVICE_PORT),
    PUBLIC_URL,
    LMS_OAUTH_URL: LMS_BROWSER_URL,
    LMS_OAUTH_INTERNAL_URL: lms.url,
    LMS_OAUTH_CLIENT_ID: LMS_CLIENT_ID,
    LMS_OAUTH_CLIENT_SECRET: LMS_CLIENT_SECRET,
    LMS_JWT_ISSUERS: lms.issuers,
    LMS_JWT_PUBLIC_SIGNING_JWK_SET: lms.publicKeySet,
  });
  for (const org of ['org-a', 'org-b', 'org-c']) {
    const admin = client(service.baseUrl, await siteAdminToken(org));
    expect((await admin.post('course-access-groups/', { name: `Group of ${org.slice(-1).toUpperCase()}`, description: '' })).status).toBe(201);
  }
  lmsIssuer = JSON.parse(lms.issuers)[0].ISSUER;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await lms?.close();
});

async function newPage(o: { clock?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  contexts.push(context);
  // Time flows as usual; the renewal test jumps it forward instead of waiting an hour.
  if (o.clock) await context.clock.install();
  const page = await context.newPage();
  watches.push(await watch(page));
  return page;
}

/** What an administrator does: the LMS page, its console link, the LMS's sign-in form. */
async function signInFromTheLms(page: Page, username: string): Promise<void> {
  await page.goto(`${LMS_BROWSER_URL}/`);
  await page.getByRole('link', { name: 'Course Access Groups console' }).click();
  const form = page.getByRole('form', { name: 'LMS sign-in' });
  await form.getByLabel('Username').fill(username);
  await form.getByLabel('Password').fill(LMS_PASSWORD);
  await form.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * Every place a script on the console's page can read: both storages, the cookies it may see,
 * the address and the history's state, the window's name, the page's markup, and the URLs of
 * every resource and navigation the page loaded.
 */
async function scriptVisible(page: Page): Promise<string> {
  return page.evaluate(() => {
    const storage = (s: any) => Array.from({ length: s.length }, (_, i) => `${s.key(i)}=${s.getItem(s.key(i))}`);
    return [
      ...storage(sessionStorage),
      ...storage(localStorage),
      document.cookie,
      location.href,
      JSON.stringify(history.state),
      window.name,
      document.documentElement.outerHTML,
      ...performance.getEntries().map((e: { name: string }) => e.name),
    ].join('\n');
  });
}

/** The payloads of the JWTs in `text`. */
const jwtsIn = (text: string) =>
  [...text.matchAll(/eyJ[A-Za-z0-9_-]+\.(eyJ[A-Za-z0-9_-]+)\.[A-Za-z0-9_-]*/g)].map(
    (m) => JSON.parse(Buffer.from(m[1]!, 'base64url').toString()) as Record<string, unknown>,
  );

const storedToken = (page: Page): Promise<string | null> => page.evaluate(() => sessionStorage.getItem('cag-console-token'));
const groupNames = (page: Page) => page.locator('table.data tbody td[data-label="Name"]').allInnerTexts();

async function groupsPage(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Groups' }).click();
  await page.waitForFunction(() => location.hash === '#/groups');
  // The page itself, not the one the hash left (the hashchange handler renders it a moment later).
  await page.getByRole('heading', { level: 1, name: 'Groups' }).waitFor();
  await settled(page);
}

describe('an administrator of one organization', () => {
  let page: Page;
  const lmsRequests: string[] = [];

  beforeAll(async () => {
    page = await newPage({ clock: true });
    page.on('request', (r) => {
      if (r.url().startsWith(LMS_BROWSER_URL) || r.url().includes('/oauth/')) lmsRequests.push(r.url());
    });
  });

  test("from the LMS's link to the console showing their organization's data, nothing typed but the LMS sign-in", async () => {
    await signInFromTheLms(page, 'ada');
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    await settled(page);
    expect(await page.locator('.who').innerText()).toMatch(/User 7.*site administrator of org-a/s);
    // Nothing in the address bar; the tab keeps the console's own token, never the LMS's JWT.
    expect(page.url()).toBe(`${PUBLIC_URL}${CONSOLE_PREFIX}/#/overview`);
    const token = await storedToken(page);
    expect(token).toMatch(/^eyJ/);
    expect(JSON.parse(Buffer.from(token!.split('.')[0]!, 'base64url').toString()).alg).toBe('HS256');
    const visible = jwtsIn(await scriptVisible(page));
    expect(visible.length).toBeGreaterThan(0);
    for (const claims of visible) {
      expect(claims.iss).toBe(`${PUBLIC_URL}${CONSOLE_PREFIX}`);
      expect(claims.aud).toBe(`${PUBLIC_URL}${CONSOLE_PREFIX}`);
      expect(claims.scopes).toBeUndefined();
    }
    expect(visible.map((c) => c.iss)).not.toContain(lmsIssuer);
    await groupsPage(page);
    expect(await groupNames(page)).toEqual(['Group of A']);
    expect(await page.getByRole('form', { name: 'Organization' }).count()).toBe(0);
  });

  test('renewal: before the token expires the console goes through the LMS again, silently, back to the same page', async () => {
    const receivedBefore = await page.evaluate(() => sessionStorage.getItem('cag-console-received'));
    lmsRequests.length = 0;
    const back = page.waitForRequest((r) => r.url().includes('/oauth/callback?'));
    // The LMS's JWTs live an hour (JWT_ACCESS_TOKEN_EXPIRE_SECONDS); the console renews 5 minutes before.
    await page.clock.fastForward('56:00');
    await back;
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    await page.waitForFunction(() => location.hash === '#/groups');
    await settled(page);
    expect(await groupNames(page)).toEqual(['Group of A']);
    // Through the login route with the page to return to, the LMS's authorize answering at once
    // with a code (a live session, a skip-authorization application): no LMS sign-in page.
    expect(lmsRequests.map((u) => new URL(u).pathname)).toEqual([
      `${CONSOLE_PREFIX}/oauth/login`,
      '/oauth2/authorize',
      `${CONSOLE_PREFIX}/oauth/callback`,
      `${CONSOLE_PREFIX}/oauth/finish`,
    ]);
    expect(new URL(lmsRequests[0]!).searchParams.get('return')).toBe('#/groups');
    expect(await page.evaluate(() => sessionStorage.getItem('cag-console-received'))).not.toBe(receivedBefore);
    expect(await storedToken(page)).toMatch(/^eyJ/);
  });

  test('sign-out drops the token and ends the LMS session too: the next sign-in asks for the password again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The LMS's /logout sends the browser back to the console (its redirect whitelist), signed out.
    await page.waitForURL(`${PUBLIC_URL}${CONSOLE_PREFIX}/`);
    await page.getByRole('link', { name: 'Sign in with the LMS' }).waitFor();
    expect(await storedToken(page)).toBeNull();
    await page.goto(`${LMS_BROWSER_URL}/`);
    expect(await page.locator('#who').innerText()).toMatch(/^Not signed in/);
    await page.goBack();
    await page.getByRole('link', { name: 'Sign in with the LMS' }).click();
    await page.getByRole('form', { name: 'LMS sign-in' }).waitFor();
  });
});

test('an administrator of two organizations picks one of theirs; another organization answers 403', async () => {
  const page = await newPage();
  await signInFromTheLms(page, 'bo');
  await page.getByRole('heading', { name: 'Choose an organization' }).waitFor();
  const picker = page.getByRole('form', { name: 'Organization' });
  const choice = picker.getByRole('combobox', { name: 'Organization' });
  expect(await choice.locator('option').allInnerTexts()).toEqual(['Choose one…', 'org-a', 'org-b']);
  await choice.selectOption('org-b');
  await picker.getByRole('button', { name: 'Switch organization' }).click();
  await settled(page);
  await groupsPage(page);
  expect(await groupNames(page)).toEqual(['Group of B']);
  // The same token for an organization bo does not administer.
  const status = await page.evaluate(
    async (token: string) => {
      const res = await fetch('/course_access_groups/api/v1/course-access-groups/?organization_uuid=org-c', { headers: { Authorization: `JWT ${token}` } });
      return res.status;
    },
    (await storedToken(page))!,
  );
  expect(status).toBe(403);
});

test('a user with no role here is refused on a page that says why, and nothing is stored', async () => {
  const page = await newPage();
  await signInFromTheLms(page, 'nora');
  const refusal = page.getByRole('alert');
  await refusal.waitFor();
  expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('Your account cannot use the console');
  expect(await refusal.innerText()).toMatch(/^Your LMS account \(user 10\) administers no organization in Course Access Groups and is not platform staff/);
  expect(page.url()).toMatch(new RegExp(`^${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/callback\\?code=`));
  await page.getByRole('link', { name: 'Back to the console' }).click();
  await page.getByRole('link', { name: 'Sign in with the LMS' }).waitFor();
  expect(await storedToken(page)).toBeNull();
});

test('a state tampered with on the way back is refused: nothing signed in', async () => {
  const page = await newPage();
  // Signed in to the LMS first, so that its authorize answers at once.
  await page.goto(`${LMS_BROWSER_URL}/login`);
  const form = page.getByRole('form', { name: 'LMS sign-in' });
  await form.getByLabel('Username').fill('ada');
  await form.getByLabel('Password').fill(LMS_PASSWORD);
  await form.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Course Access Groups console' }).waitFor();
  // The state changed between the browser and the LMS, which echoes it back to the callback; the
  // flow's cookie is still found (its name holds the state's first characters) but does not match.
  // (Playwright routes only the first request of a redirect chain: the login route's answer.)
  await page.route(`${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/login*`, async (route) => {
    const res = await route.fetch({ maxRedirects: 0 });
    const target = new URL(res.headers().location!, PUBLIC_URL);
    const state = target.searchParams.get('state');
    // The LMS's link first goes to the console page, which starts the sign-in from its tab.
    if (!state) return route.fulfill({ response: res });
    target.searchParams.set('state', `${state.slice(0, 12)}${'A'.repeat(state.length - 12)}`);
    return route.fulfill({ response: res, headers: { ...res.headers(), location: target.toString() } });
  });
  await page.getByRole('link', { name: 'Course Access Groups console' }).click();
  const refusal = page.getByRole('alert');
  await refusal.waitFor();
  expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('This sign-in cannot be checked');
  expect(await refusal.innerText()).toMatch(/does not match one this browser started/);
  await page.getByRole('link', { name: 'Back to the console' }).click();
  await page.getByRole('link', { name: 'Sign in with the LMS' }).waitFor();
  expect(await storedToken(page)).toBeNull();
});

describe('only the tab that started a sign-in finishes it', () => {
  test('the callback opened in a fresh tab signs nothing in; the tab that started it is signed in', async () => {
    const starter = await newPage();
    // Signed in to the LMS first, so that its authorize answers at once.
    await starter.goto(`${LMS_BROWSER_URL}/login`);
    const form = starter.getByRole('form', { name: 'LMS sign-in' });
    await form.getByLabel('Username').fill('ada');
    await form.getByLabel('Password').fill(LMS_PASSWORD);
    await form.getByRole('button', { name: 'Sign in' }).click();
    await starter.getByRole('link', { name: 'Course Access Groups console' }).waitFor();
    // The LMS's answer is caught on its way to the callback, as a link someone passes on.
    // (Playwright routes only the first request of a redirect chain: the login route's answer,
    // whose authorize URL is then asked of the LMS with this browser's cookies.)
    let link = '';
    await starter.route(`${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/login*`, async (route) => {
      const res = await route.fetch({ maxRedirects: 0 });
      const authorize = res.headers().location!;
      if (!authorize.includes('state=')) return route.fulfill({ response: res });
      // Node does not resolve lms.localhost: the same LMS at 127.0.0.1, with the browser's LMS cookies.
      const cookies = (await starter.context().cookies(LMS_BROWSER_URL)).map((c) => `${c.name}=${c.value}`).join('; ');
      const lmsAnswer = await fetch(authorize.replace(LMS_BROWSER_URL, lms.url), { redirect: 'manual', headers: { Cookie: cookies } });
      link = lmsAnswer.headers.get('location')!;
      const { location: _, ...headers } = res.headers();
      return route.fulfill({ status: 200, headers: { ...headers, 'content-type': 'text/plain' }, body: 'caught' });
    });
    await starter.getByRole('link', { name: 'Course Access Groups console' }).click();
    await starter.waitForFunction(() => document.body.innerText === 'caught');
    expect(link).toMatch(new RegExp(`^${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/callback\\?code=`));
    await starter.unroute(`${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/login*`);

    // Another tab of the same browser (its cookies, not the starter's sessionStorage) opens it.
    const other = await starter.context().newPage();
    watches.push(await watch(other));
    await other.goto(link);
    await other.getByRole('link', { name: 'Sign in with the LMS' }).waitFor();
    expect(await other.getByRole('navigation', { name: 'Sections' }).count()).toBe(0);
    expect(await storedToken(other)).toBeNull();
    expect(jwtsIn(await scriptVisible(other))).toEqual([]);

    // The tab that started it collects it.
    await starter.goto(`${PUBLIC_URL}${CONSOLE_PREFIX}/`);
    await starter.getByRole('navigation', { name: 'Sections' }).waitFor();
    expect(await starter.locator('.who').innerText()).toMatch(/User 7/);
  });

  test('a #token= link with a good token, opened in a fresh tab, signs nothing in', async () => {
    const page = await newPage();
    const good = await siteAdminToken('org-a', 7);
    await page.goto(`${PUBLIC_URL}${CONSOLE_PREFIX}/#token=${good}&route=%23%2Fgroups&via=lms`);
    await page.getByRole('link', { name: 'Sign in with the LMS' }).waitFor();
    expect(await page.locator('.signin > p.flash').innerText()).toBe('Sign-in links are not accepted: sign in here.');
    expect(await storedToken(page)).toBeNull();
    expect(await page.evaluate(() => sessionStorage.length + localStorage.length)).toBe(0);
    expect(page.url()).toBe(`${PUBLIC_URL}${CONSOLE_PREFIX}/#/overview`);
  });

  test('the callback with a state that is not this browser’s shows no text from its query', async () => {
    const page = await newPage();
    const words = 'Your account is locked, call 555 0100';
    await page.goto(`${PUBLIC_URL}${CONSOLE_PREFIX}/oauth/callback?state=made-up&error=invalid_request&error_description=${encodeURIComponent(words)}`);
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    expect(await page.getByRole('heading', { level: 1 }).innerText()).toBe('This sign-in cannot be checked');
    const text = await page.locator('body').innerText();
    for (const echoed of ['locked', '555', 'invalid_request', 'made-up']) expect(text).not.toContain(echoed);
  });
});

test('no page of this file saw a script error or a CSP violation', async () => {
  for (const w of watches) {
    expect(w.errors).toEqual([]);
    expect(await w.violations().catch(() => [])).toEqual([]);
  }
});
