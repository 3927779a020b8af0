// docs/console.md, "Signing in through the LMS": the service's oauth/login and oauth/callback
// routes over real HTTP against the stand-in LMS (test/lms-oauth: django-oauth-toolkit 1.7.1, the
// LMS's pin, with a token view that mints as edx-platform's oauth_dispatch AccessTokenView does).
// The whole round trip without a browser, then every bad input: a missing, forged or mismatched
// state, the LMS's error parameter (a real one, from DOT), a code the LMS refuses, an LMS that
// cannot be reached, a token the trust path refuses, and a user with no role here.
import { generateKeyPairSync } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { CONSOLE_PREFIX } from '../../src/console/route';
import { randomToken } from '../../src/console/sign-in/pkce';
import { ATTEMPTS_COOKIE, derivedKey, FINISH_COOKIE, MAX_ATTEMPTS, newAttempt, sealAttempts } from '../../src/console/sign-in/state-cookie';
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

/**
 * oauth/login as the console's tab calls it (with its secret): the LMS's authorize URL, the
 * attempts' cookie as the browser would send it back, and the tab's secret.
 */
async function startSignIn(service: TestService, query = '', cookie?: string) {
  const tab = randomToken();
  const res = await get(`${service.baseUrl}${CONSOLE_PREFIX}/oauth/login${query}${query ? '&' : '?'}tab=${tab}`, cookie);
  expect(res.status).toBe(302);
  const setCookie = res.headers.getSetCookie();
  expect(setCookie).toHaveLength(1);
  return { authorize: new URL(res.headers.get('location')!), setCookie: setCookie[0]!, cookie: setCookie[0]!.split(';')[0]!, tab };
}

/** The tab collects its token (oauth/finish) with the cookies the callback left. */
async function finish(service: TestService, cookie: string | undefined, tab: string | null, headers: Record<string, string> = {}) {
  const res = await fetch(`${service.baseUrl}${CONSOLE_PREFIX}/oauth/finish`, {
    method: 'POST',
    headers: { ...(cookie ? { Cookie: cookie } : {}), ...(tab ? { 'X-Console-Sign-In': tab } : {}), ...headers },
  });
  return { status: res.status, body: (await res.json()) as { token?: string; route?: string; detail?: string }, setCookie: res.headers.getSetCookie() };
}

const cookieOf = (setCookie: string[], name: string) => setCookie.find((c) => c.startsWith(`${name}=`))?.split(';')[0];

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

test('the round trip: login sends the browser to the LMS with PKCE; the callback keeps the LMS token and hands the tab a token of the console only', async () => {
  const { authorize, setCookie, cookie, tab } = await startSignIn(good, '?return=%23%2Fgroups');
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
  expect(setCookie).toMatch(new RegExp(`^${ATTEMPTS_COOKIE}=[^;]+; Path=${CONSOLE_PREFIX}/oauth/; Max-Age=600; HttpOnly; SameSite=Lax$`));
  // The verifier and the tab's secret travel only inside the encrypted cookie; the LMS never sees the secret.
  expect(setCookie).not.toContain(params.code_challenge);
  expect(setCookie).not.toContain(tab);
  expect(authorize.toString()).not.toContain(tab);

  const back = await authorizeAt(authorize, 'ada');
  expect(`${back.origin}${back.pathname}`).toBe(callbackOf(GOOD_PORT));
  expect(back.searchParams.get('state')).toBe(params.state);
  const done = await callback(good, back, cookie);
  expect(done.status).toBe(302);
  expect(done.headers.get('cache-control')).toBe('no-store');
  // Back to the console's page, with nothing in the URL; the attempt is dropped, the finished sign-in waits in a cookie.
  expect(done.location).toBe(`${CONSOLE_PREFIX}/#/groups`);
  const set = done.headers.getSetCookie();
  expect(set).toEqual([
    expect.stringMatching(new RegExp(`^${ATTEMPTS_COOKIE}=; .*Max-Age=0`)),
    expect.stringMatching(new RegExp(`^${FINISH_COOKIE}=[^;]+; Path=${CONSOLE_PREFIX}/oauth/; Max-Age=120; HttpOnly; SameSite=Strict$`)),
  ]);
  expect(done.page).not.toMatch(/eyJ/);

  const finishCookie = cookieOf(set, FINISH_COOKIE)!;
  const collected = await finish(good, finishCookie, tab);
  expect(collected.status).toBe(200);
  expect(collected.body.route).toBe('#/groups');
  const token = collected.body.token!;
  // The console's own token: HS256, issued for the console alone, no longer than the LMS's; not the LMS's JWT.
  expect(decodeProtectedHeader(token).alg).toBe('HS256');
  const claims = decodeJwt(token);
  expect(claims).toMatchObject({ user_id: 7, administrator: false, roles: ['course_access_groups_admin:org-a'] });
  expect(claims.iss).toBe(`http://127.0.0.1:${GOOD_PORT}${CONSOLE_PREFIX}`);
  expect(claims.aud).toBe(claims.iss);
  expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(3600);
  expect(JSON.stringify(claims)).not.toContain('scopes');
  // The API takes it for ada's organization.
  const groups = await client(good.baseUrl).get('course-access-groups/', { Authorization: `Bearer ${token}` });
  expect(groups.status).toBe(200);
  expect(groups.body.results.map((g: { name: string }) => g.name)).toEqual(['Group of A']);
  // Collected once: the cookie is dropped, and a second try finds nothing.
  expect(collected.setCookie).toEqual([expect.stringMatching(new RegExp(`^${FINISH_COOKIE}=; .*Max-Age=0`))]);
  expect((await finish(good, undefined, tab)).status).toBe(403);
  // The code was spent: the same callback again (with the old cookie) is refused by the LMS.
  expect((await callback(good, back, cookie)).status).toBe(502);
});

describe('only the tab that started the sign-in can finish it', () => {
  async function finishedElsewhere() {
    const { authorize, cookie, tab } = await startSignIn(good);
    const done = await callback(good, await authorizeAt(authorize, 'ada'), cookie);
    expect(done.status).toBe(302);
    return { finishCookie: cookieOf(done.headers.getSetCookie(), FINISH_COOKIE)!, tab };
  }

  test('another tab (no secret, or another one) gets nothing, and the attempt is spent', async () => {
    const { finishCookie, tab } = await finishedElsewhere();
    const none = await finish(good, finishCookie, null);
    expect(none.status).toBe(403);
    expect(none.body).toEqual({ detail: 'No sign-in waits for this tab: sign in again from here.' });
    expect(JSON.stringify(none.body)).not.toMatch(/eyJ/);
    expect((await finish(good, finishCookie, randomToken())).status).toBe(403);
    // The real tab, had the cookie still been there, would have got it: a wrong try does not leak which.
    expect((await finish(good, finishCookie, tab)).status).toBe(200);
  });

  test('a request from another site (Sec-Fetch-Site) gets nothing even with the secret', async () => {
    const { finishCookie, tab } = await finishedElsewhere();
    expect((await finish(good, finishCookie, tab, { 'Sec-Fetch-Site': 'same-site' })).status).toBe(403);
  });

  test('login without a tab (a link from the LMS) only sends the browser to the console page, which starts it from its tab', async () => {
    const res = await get(`${good.baseUrl}${CONSOLE_PREFIX}/oauth/login?return=%23%2Fgroups`);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${CONSOLE_PREFIX}/?sign-in=lms#/groups`);
    expect(res.headers.getSetCookie()).toEqual([]);
  });
});

test(`abandoned sign-ins do not pile up: one cookie, the newest ${MAX_ATTEMPTS} attempts in it`, async () => {
  let cookie: string | undefined;
  const states: string[] = [];
  const sizes: number[] = [];
  for (let i = 0; i < 50; i++) {
    const started = await startSignIn(good, '', cookie);
    cookie = started.cookie;
    sizes.push(started.setCookie.length);
    states.push(started.authorize.searchParams.get('state')!);
  }
  expect(cookie!.startsWith(`${ATTEMPTS_COOKIE}=`)).toBe(true);
  expect(Math.max(...sizes)).toBeLessThan(1500);
  // The oldest is gone; the newest still finish (two tabs signing in at once both work).
  const oldest = await callback(good, new URL(`${callbackOf(GOOD_PORT)}?code=x&state=${states[0]}`), cookie);
  expect(oldest.status).toBe(400);
  const newest = await callback(good, new URL(`${callbackOf(GOOD_PORT)}?code=x&state=${states[49]}`), cookie);
  expect(newest.status).toBe(502); // past the state check: the made-up code is the LMS's to refuse
  const third = await callback(good, new URL(`${callbackOf(GOOD_PORT)}?code=x&state=${states[50 - MAX_ATTEMPTS]}`), cookie);
  expect(third.status).toBe(502);
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
    lmsIssuers: JSON.parse(lms.issuers).map((i: { ISSUER: string }) => i.ISSUER),
    exchange: 'oauth/exchange',
  });
});

test('a return route that is not a console route is replaced by the overview', async () => {
  const { authorize, cookie } = await startSignIn(good, `?return=${encodeURIComponent('https://evil.example/')}`);
  const done = await callback(good, await authorizeAt(authorize, 'ada'), cookie);
  expect(done.location).toBe(`${CONSOLE_PREFIX}/#/overview`);
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
    expect(done.headers.getSetCookie()).toEqual([]);
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
    const forged = await sealAttempts(derivedKey('not-the-client-secret', 'state cookie'), [
      newAttempt({ state, verifier: 'x'.repeat(43), route: '#/overview', tab: randomToken() }),
    ]);
    const done = await callback(good, back, `${ATTEMPTS_COOKIE}=${forged}`);
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
    const { authorize, cookie } = await startSignIn(good);
    const done = await callback(good, new URL(`${callbackOf(GOOD_PORT)}?error=access_denied&state=${authorize.searchParams.get('state')}`), cookie);
    expect(done.status).toBe(403);
    expect(reason(done.page)).toMatch(/access was denied/);
  });

  test('with a state that is not this browser’s, nothing of the query is shown: not the error, not its description', async () => {
    const query = `?state=whatever&error=invalid_request&error_description=${encodeURIComponent('Call +1 555 0100 <b>now</b>')}`;
    const done = await callback(good, new URL(`${callbackOf(GOOD_PORT)}${query}`));
    expect(done.status).toBe(400);
    expect(reason(done.page)).toMatch(/^The sign-in’s state is missing, expired, or does not match/);
    for (const echoed of ['invalid_request', '555', 'now', 'whatever']) expect(done.page).not.toContain(echoed);
  });

  test('with a good state, an error that is not an OAuth2 code, and any description, are not repeated', async () => {
    const { authorize, cookie } = await startSignIn(good);
    const state = authorize.searchParams.get('state')!;
    const query = `?state=${state}&error=${encodeURIComponent('<script>alert(1)</script>')}&error_description=${encodeURIComponent('Call 555 0100')}`;
    const done = await callback(good, new URL(`${callbackOf(GOOD_PORT)}${query}`), cookie);
    expect(done.status).toBe(400);
    expect(reason(done.page)).toMatch(/^The LMS answered with an error\./);
    expect(done.page).not.toContain('script>');
    expect(done.page).not.toContain('555');
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
  expect(done.location).toBe(`${CONSOLE_PREFIX}/#/overview`);
  expect(cookieOf(done.headers.getSetCookie(), FINISH_COOKIE)).toBeDefined();
});

test('without LMS_OAUTH_CLIENT_ID the routes do not exist and config.json says so', async () => {
  const off = await startTestService({ LMS_JWT_ISSUERS: lms.issuers, LMS_JWT_PUBLIC_SIGNING_JWK_SET: lms.publicKeySet });
  try {
    // The LMS's issuers still (its tokens are trusted): the page refuses to keep one, having nowhere to trade it.
    expect((await client(off.baseUrl).get(`${CONSOLE_PREFIX}/config.json`)).body).toEqual({
      lmsSignIn: null,
      lmsIssuers: JSON.parse(lms.issuers).map((i: { ISSUER: string }) => i.ISSUER),
      exchange: null,
    });
    expect((await fetch(`${off.baseUrl}${CONSOLE_PREFIX}/oauth/exchange`, { method: 'POST' })).status).toBe(404);
    expect((await get(`${off.baseUrl}${CONSOLE_PREFIX}/oauth/login`)).status).toBe(404);
    expect((await get(`${off.baseUrl}${CONSOLE_PREFIX}/oauth/callback?code=a&state=b`)).status).toBe(404);
  } finally {
    await off.close();
  }
});

describe('oauth/exchange: an LMS JWT pasted by hand is traded for the console token; the page never keeps the LMS one', () => {
  // An LMS of the test's own key (the stand-in's private key stays in its process), shaped as
  // edx-platform's oauth_dispatch/jwt.py _create_jwt makes them (lms-jwt.test.ts proves the shape).
  const lmsKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ISSUER = 'http://lms.exchange.test/oauth2';
  const PUBLIC_URL = 'http://cag.exchange.test';
  let service: TestService;
  const lmsToken = (claims: Record<string, unknown>, exp = '1h') =>
    new SignJWT({ version: '1.2.0', is_restricted: false, filters: [], scopes: ['user_id', 'email', 'profile'], administrator: false, ...claims })
      .setProtectedHeader({ alg: 'RS512' })
      .setIssuer(ISSUER)
      .setAudience('openedx')
      .setIssuedAt()
      .setExpirationTime(exp)
      .sign(lmsKey.privateKey);
  const exchange = (authorization?: string) =>
    fetch(`${service.baseUrl}${CONSOLE_PREFIX}/oauth/exchange`, { method: 'POST', headers: authorization ? { Authorization: authorization } : {} }).then(
      async (res) => ({ status: res.status, cache: res.headers.get('cache-control'), body: (await res.json()) as { token?: string; detail?: string } }),
    );

  beforeAll(async () => {
    service = await startTestService({
      PUBLIC_URL,
      LMS_OAUTH_URL: 'http://lms.exchange.test',
      LMS_OAUTH_CLIENT_ID: 'console',
      LMS_OAUTH_CLIENT_SECRET: 'the-exchange-test-client-secret',
      LMS_JWT_ISSUERS: JSON.stringify([{ ISSUER, AUDIENCE: 'openedx' }]),
      LMS_JWT_PUBLIC_SIGNING_JWK_SET: JSON.stringify({ keys: [{ kid: 'openedx', ...lmsKey.publicKey.export({ format: 'jwk' }) }] }),
    });
    const a = client(service.baseUrl, await siteAdminToken('org-a'));
    expect((await a.post('course-access-groups/', { name: 'Group of A', description: '' })).status).toBe(201);
  });
  afterAll(async () => {
    await service?.close();
  });

  test("a trusted LMS token gives the console's own token (HS256, this service's issuer and audience, the same user and roles, no longer-lived), which the API takes", async () => {
    const pasted = await lmsToken({ user_id: 21, roles: ['course_access_groups_admin:org-a'] }, '2h');
    const traded = await exchange(`JWT ${pasted}`);
    expect({ status: traded.status, cache: traded.cache }).toEqual({ status: 200, cache: 'no-store' });
    const token = traded.body.token!;
    expect(decodeProtectedHeader(token).alg).toBe('HS256');
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({
      iss: `${PUBLIC_URL}${CONSOLE_PREFIX}`,
      aud: `${PUBLIC_URL}${CONSOLE_PREFIX}`,
      user_id: 21,
      roles: ['course_access_groups_admin:org-a'],
    });
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(3600);
    expect(token).not.toContain(pasted.split('.')[2]);
    const groups = await client(service.baseUrl).get('course-access-groups/', { Authorization: `Bearer ${token}` });
    expect(groups.body.results.map((g: { name: string }) => g.name)).toEqual(['Group of A']);
    // `Bearer` as well as the LMS's `JWT` prefix.
    expect((await exchange(`Bearer ${pasted}`)).status).toBe(200);
  });

  test("refused, with the reason and no token: no token, a token of the service's own keys (the LMS's trust path alone), an expired or forged LMS token, a user who administers nothing here", async () => {
    expect(await exchange()).toMatchObject({ status: 401, body: { detail: expect.any(String) } });
    expect((await exchange(`Bearer ${await siteAdminToken('org-a')}`)).status).toBe(401);
    expect(await exchange(`JWT ${await lmsToken({ user_id: 21, roles: ['course_access_groups_admin:org-a'] }, '-1m')}`)).toMatchObject({
      status: 401,
      body: { detail: 'Token has expired.' },
    });
    const forged = await new SignJWT({ user_id: 21, roles: ['course_access_groups_admin:org-a'] })
      .setProtectedHeader({ alg: 'RS512' })
      .setIssuer(ISSUER)
      .setAudience('openedx')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
    expect((await exchange(`JWT ${forged}`)).status).toBe(401);
    const nobody = await exchange(`JWT ${await lmsToken({ user_id: 22, roles: [] })}`);
    expect(nobody.status).toBe(403);
    expect(nobody.body.detail).toMatch(/^Your LMS account \(user 22\) administers no organization/);
    expect(nobody.body.token).toBeUndefined();
  });
});
