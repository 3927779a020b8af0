// docs/console.md, "Signing in through the LMS": the service's oauth/login and oauth/callback
// routes over real HTTP against the stand-in LMS (test/lms-oauth: django-oauth-toolkit 1.7.1, the
// LMS's pin, with a token view that mints as edx-platform's oauth_dispatch AccessTokenView does).
// The whole round trip without a browser, then every bad input: a missing, forged or mismatched
// state, the LMS's error parameter (a real one, from DOT), a code the LMS refuses, an LMS that
// cannot be reached, a token the trust path refuses, and a user with no role here.
import { generateKeyPairSync } from 'node:crypto';
import { CONSOLE_PREFIX } from '../../src/console/route';
import { cookieName, sealState, stateKey } from '../../src/console/sign-in/state-cookie';
import { client } from '../helpers/http';
import { LMS_CLIENT_ID, LMS_CLIENT_SECRET, type LmsStandIn, lmsSession, startLmsStandIn } from '../helpers/lms-stand-in';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

// Ports of this file's block (the service's PUBLIC_URL, hence its port, is in the LMS's registered redirect URIs).
const LMS_PORT = 8215;
const GOOD_PORT = 8213;
const WRONG_KEYS_PORT = 8214;
const LMS_AWAY_PORT = 8216;
const NOTHING_LISTENS = 8219;
const callbackOf = (port: number) => `http://127.0.0.1:${port}${CONSOLE_PREFIX}/oauth/callback`;

let lms: LmsStandIn;
let good: TestService;
let wrongKeys: TestService;
let lmsAway: TestService;

const signInEnv = (port: number, over: Record<string, string> = {}) => ({
  PORT: String(port),
  PUBLIC_URL: `http://127.0.0.1:${port}`,
  LMS_OAUTH_URL: lms.url,
  LMS_OAUTH_CLIENT_ID: LMS_CLIENT_ID,
  LMS_OAUTH_CLIENT_SECRET: LMS_CLIENT_SECRET,
  LMS_JWT_ISSUERS: lms.issuers,
  LMS_JWT_PUBLIC_SIGNING_JWK_SET: lms.publicKeySet,
  ...over,
});

beforeAll(async () => {
  lms = await startLmsStandIn({ port: LMS_PORT, redirectUris: [GOOD_PORT, WRONG_KEYS_PORT, LMS_AWAY_PORT].map(callbackOf) });
  const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' });
  [good, wrongKeys, lmsAway] = await Promise.all([
    startTestService(signInEnv(GOOD_PORT)),
    // An operator who copied another LMS's key set.
    startTestService(signInEnv(WRONG_KEYS_PORT, { LMS_JWT_PUBLIC_SIGNING_JWK_SET: JSON.stringify({ keys: [{ kid: 'openedx', ...stranger }] }) })),
    startTestService(signInEnv(LMS_AWAY_PORT, { LMS_OAUTH_INTERNAL_URL: `http://127.0.0.1:${NOTHING_LISTENS}` })),
  ]);
  const a = client(good.baseUrl, await siteAdminToken('org-a'));
  expect((await a.post('course-access-groups/', { name: 'Group of A', description: '' })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await Promise.all([good?.close(), wrongKeys?.close(), lmsAway?.close()]);
  await lms?.close();
});

const get = (url: string, cookie?: string) => fetch(url, { redirect: 'manual', headers: cookie ? { Cookie: cookie } : {} });

/** oauth/login: the LMS's authorize URL, and the flow's cookie as the browser would send it back. */
async function startSignIn(service: TestService, query = '') {
  const res = await get(`${service.baseUrl}${CONSOLE_PREFIX}/oauth/login${query}`);
  expect(res.status).toBe(302);
  const setCookie = res.headers.getSetCookie();
  expect(setCookie).toHaveLength(1);
  return { authorize: new URL(res.headers.get('location')!), setCookie: setCookie[0]!, cookie: setCookie[0]!.split(';')[0]! };
}

/** The LMS's answer to the authorize URL for a signed-in user: the redirect to the callback. */
async function authorizeAt(authorize: URL, username: string): Promise<URL> {
  const res = await get(authorize.toString(), await lmsSession(lms.url, username));
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location')!);
}

async function callback(service: TestService, back: URL, cookie?: string) {
  const res = await get(`${service.baseUrl}${back.pathname}${back.search}`, cookie);
  return { status: res.status, location: res.headers.get('location'), page: await res.text(), headers: res.headers };
}

/** The refusal page's reason line. */
const reason = (page: string) =>
  /<p class="flash flash-error" role="alert" id="refusal">([^<]*)<\/p>/.exec(page)?.[1] ?? `(no reason in ${page.slice(0, 200)})`;

test('the round trip: login sends the browser to the LMS with PKCE; the callback hands a verified LMS token to the console', async () => {
  const { authorize, setCookie, cookie } = await startSignIn(good, '?return=%23%2Fgroups');
  expect(`${authorize.origin}${authorize.pathname}`).toBe(`${lms.url}/oauth2/authorize`);
  const params = Object.fromEntries(authorize.searchParams);
  expect(params).toMatchObject({
    response_type: 'code',
    client_id: LMS_CLIENT_ID,
    redirect_uri: callbackOf(GOOD_PORT),
    scope: 'user_id profile',
    code_challenge_method: 'S256',
  });
  expect(params.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(params.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
  // Short-lived, script-proof, sent back on the LMS's top-level redirect, only to the oauth routes; http here, so not Secure.
  expect(setCookie).toMatch(new RegExp(`^${cookieName(params.state!)}=[^;]+; Path=${CONSOLE_PREFIX}/oauth/; Max-Age=600; HttpOnly; SameSite=Lax$`));
  // The verifier travels only inside the encrypted cookie.
  expect(setCookie).not.toContain(params.code_challenge);

  const back = await authorizeAt(authorize, 'ada');
  expect(`${back.origin}${back.pathname}`).toBe(callbackOf(GOOD_PORT));
  expect(back.searchParams.get('state')).toBe(params.state);
  const done = await callback(good, back, cookie);
  expect(done.status).toBe(302);
  expect(done.headers.get('cache-control')).toBe('no-store');
  // The flow's cookie is dropped.
  expect(done.headers.getSetCookie()).toEqual([expect.stringMatching(new RegExp(`^${cookieName(params.state!)}=; .*Max-Age=0`))]);
  const target = new URL(done.location!, good.baseUrl);
  expect(target.pathname).toBe(`${CONSOLE_PREFIX}/`);
  expect(target.search).toBe('');
  const fragment = new URLSearchParams(target.hash.slice(1));
  expect(fragment.get('route')).toBe('#/groups');
  expect(fragment.get('via')).toBe('lms');
  const token = fragment.get('token')!;
  const [header, payload] = token
    .split('.')
    .slice(0, 2)
    .map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
  expect(header.alg).toBe('RS512'); // asymmetric_jwt was posted: never the LMS's HS256
  expect(payload).toMatchObject({ user_id: 7, roles: ['course_access_groups_admin:org-a'], scopes: ['user_id', 'profile'], grant_type: 'authorization-code' });
  // The token is the LMS's own, and the API takes it for ada's organization.
  const groups = await client(good.baseUrl).get('course-access-groups/', { Authorization: `JWT ${token}` });
  expect(groups.status).toBe(200);
  expect(groups.body.results.map((g: { name: string }) => g.name)).toEqual(['Group of A']);
  // The code was spent: the same callback again finds no state.
  expect((await callback(good, back, cookie)).status).toBe(502);
});

test('config.json offers the LMS sign-in with its login route and the LMS logout that returns to the console', async () => {
  const res = await client(good.baseUrl).get(`${CONSOLE_PREFIX}/config.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
  expect(res.body).toEqual({
    lmsSignIn: {
      login: `${CONSOLE_PREFIX}/oauth/login`,
      logout: `${lms.url}/logout?redirect_url=${encodeURIComponent(`http://127.0.0.1:${GOOD_PORT}${CONSOLE_PREFIX}/`)}`,
    },
  });
});

test('a return route that is not a console route is replaced by the overview', async () => {
  const { authorize, cookie } = await startSignIn(good, `?return=${encodeURIComponent('https://evil.example/')}`);
  const done = await callback(good, await authorizeAt(authorize, 'ada'), cookie);
  expect(new URLSearchParams(new URL(done.location!, good.baseUrl).hash.slice(1)).get('route')).toBe('#/overview');
});

describe('a state that cannot be checked is refused with a page that says why, and nothing is signed in', () => {
  test('no state at all', async () => {
    const done = await callback(good, new URL(`${callbackOf(GOOD_PORT)}?code=abc`));
    expect(done.status).toBe(400);
    expect(done.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(done.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(reason(done.page)).toMatch(/^The sign-in’s state is missing, expired, or does not match/);
    expect(done.location).toBeNull();
  });

  test('the LMS’s answer without the cookie the login set (another browser)', async () => {
    const { authorize } = await startSignIn(good);
    const done = await callback(good, await authorizeAt(authorize, 'ada'));
    expect(done.status).toBe(400);
    expect(done.page).not.toContain('#token=');
  });

  test('a state changed on the way back', async () => {
    const { authorize, cookie } = await startSignIn(good);
    const back = await authorizeAt(authorize, 'ada');
    const state = back.searchParams.get('state')!;
    back.searchParams.set('state', `${state.slice(0, 12)}${state.slice(12).split('').reverse().join('')}`); // same cookie name, another state
    const done = await callback(good, back, cookie);
    expect(done.status).toBe(400);
    expect(reason(done.page)).toMatch(/does not match/);
  });

  test('a cookie sealed with another key (forged): its own state, its own verifier', async () => {
    const { authorize } = await startSignIn(good);
    const back = await authorizeAt(authorize, 'ada');
    const state = back.searchParams.get('state')!;
    const forged = await sealState(stateKey('not-the-client-secret'), { state, verifier: 'x'.repeat(43), route: '#/overview' });
    const done = await callback(good, back, `${cookieName(state)}=${forged}`);
    expect(done.status).toBe(400);
  });
});

describe("the LMS's error parameter", () => {
  test('a real DOT error (a scope the LMS does not know) is shown with its code', async () => {
    const { authorize, cookie } = await startSignIn(good);
    authorize.searchParams.set('scope', 'user_id no_such_scope');
    const back = await authorizeAt(authorize, 'ada');
    expect(back.searchParams.get('error')).toBe('invalid_scope');
    const done = await callback(good, back, cookie);
    expect(done.status).toBe(400);
    expect(reason(done.page)).toMatch(/^The LMS answered with the error “invalid_scope”/);
    expect(done.headers.getSetCookie()[0]).toMatch(/Max-Age=0/);
  });

  test('denied consent', async () => {
    const done = await callback(good, new URL(`${callbackOf(GOOD_PORT)}?error=access_denied&state=whatever`));
    expect(done.status).toBe(403);
    expect(reason(done.page)).toMatch(/access was denied/);
  });

  test('markup in the error is shown as text', async () => {
    const done = await callback(good, new URL(`${callbackOf(GOOD_PORT)}?error=${encodeURIComponent('<script>alert(1)</script>')}`));
    expect(done.status).toBe(400);
    expect(done.page).not.toContain('<script>');
    expect(reason(done.page)).toContain('&lt;script&gt;');
  });
});

describe('the code exchange fails', () => {
  test('the LMS refuses the code (given by the LMS to another flow: its PKCE verifier does not match)', async () => {
    const first = await startSignIn(good);
    const second = await startSignIn(good);
    const back = await authorizeAt(first.authorize, 'ada');
    const stolen = new URL(back);
    stolen.searchParams.set('state', second.authorize.searchParams.get('state')!);
    const done = await callback(good, stolen, second.cookie);
    expect(done.status).toBe(502);
    expect(reason(done.page)).toMatch(/^The LMS refused to exchange the code \(HTTP 400, invalid_grant\)/);
  });

  test('the LMS cannot be reached from the service (LMS_OAUTH_INTERNAL_URL)', async () => {
    const { authorize, cookie } = await startSignIn(lmsAway);
    // The browser's side (LMS_OAUTH_URL) works; only the service's own way to the LMS is down.
    expect(authorize.origin).toBe(lms.url);
    const done = await callback(lmsAway, await authorizeAt(authorize, 'ada'), cookie);
    expect(done.status).toBe(502);
    expect(reason(done.page)).toMatch(/^The LMS’s token endpoint did not answer/);
  });
});

test('a token the trust path refuses (the service holds another key set) is not handed to the console', async () => {
  const { authorize, cookie } = await startSignIn(wrongKeys);
  const done = await callback(wrongKeys, await authorizeAt(authorize, 'ada'), cookie);
  expect(done.status).toBe(403);
  expect(done.location).toBeNull();
  expect(reason(done.page)).toMatch(/^The service does not trust the token the LMS gave: Invalid token\./);
  expect(done.page).not.toMatch(/eyJ/); // no token on the page
});

test('a user who administers no organization here and is not staff is refused, saying why', async () => {
  const { authorize, cookie } = await startSignIn(good);
  const done = await callback(good, await authorizeAt(authorize, 'nora'), cookie);
  expect(done.status).toBe(403);
  expect(reason(done.page)).toMatch(/^Your LMS account \(user 10\) administers no organization in Course Access Groups and is not platform staff/);
});

test('platform staff are let in (they choose an organization in the console)', async () => {
  const { authorize, cookie } = await startSignIn(good);
  const done = await callback(good, await authorizeAt(authorize, 'sam'), cookie);
  expect(done.status).toBe(302);
  expect(done.location).toMatch(/#token=/);
});

test('without LMS_OAUTH_CLIENT_ID the routes do not exist and config.json says so', async () => {
  const off = await startTestService({ LMS_JWT_ISSUERS: lms.issuers, LMS_JWT_PUBLIC_SIGNING_JWK_SET: lms.publicKeySet });
  try {
    expect((await client(off.baseUrl).get(`${CONSOLE_PREFIX}/config.json`)).body).toEqual({ lmsSignIn: null });
    expect((await get(`${off.baseUrl}${CONSOLE_PREFIX}/oauth/login`)).status).toBe(404);
    expect((await get(`${off.baseUrl}${CONSOLE_PREFIX}/oauth/callback?code=a&state=b`)).status).toBe(404);
  } finally {
    await off.close();
  }
});
