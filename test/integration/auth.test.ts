// docs/api.md: authentication (jose) and who may use the admin API. Each case names the rule it proves.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, SignJWT } from 'jose';
import { client } from '../helpers/http';
import { startTestService, TEST_JWT_SECRET, type TestService } from '../helpers/stack';
import { siteAdminToken, staffToken, token } from '../helpers/tokens';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

const PATH = 'course-access-groups/';
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

async function status(bearer: string | undefined, path = PATH, headers: Record<string, string> = {}) {
  const res = await client(service.baseUrl, bearer).get(path, headers);
  return { status: res.status, body: res.body, auth: res.headers.get('www-authenticate') };
}

describe('401: missing, malformed, expired or badly signed token', () => {
  test('no Authorization header', async () => {
    const res = await status(undefined);
    expect(res).toEqual({ status: 401, body: { detail: expect.any(String) }, auth: 'Bearer' });
  });

  test.each([
    ['another scheme', 'Token abc.def.ghi'],
    ['no token after Bearer', 'Bearer '],
    ['not three parts', 'Bearer abc.def'],
    ['garbage in three parts', 'Bearer a.b.c'],
  ])('a malformed header: %s', async (_name, header) => {
    const res = await client(service.baseUrl).get(PATH, { Authorization: header });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: expect.any(String) });
  });

  test('a bad signature (another secret)', async () => {
    expect((await status(await token({ user_id: 1, administrator: true }, { secret: 'another-secret-0123456789' }))).status).toBe(401);
  });

  test('a payload changed after signing', async () => {
    const [h, , s] = (await staffToken()).split('.');
    const forged = `${h}.${b64({ user_id: 1, administrator: true, exp: inAnHour() + 10 })}.${s}`;
    expect((await status(forged)).status).toBe(401);
  });

  test('an expired token', async () => {
    const res = await status(await token({ user_id: 1, administrator: true }, { exp: Math.floor(Date.now() / 1000) - 10 }));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Token has expired.' });
  });

  test('a token not yet valid (nbf an hour ahead): issue 6, a token cannot be used before its time', async () => {
    const early = await token({ user_id: 1, administrator: true, nbf: inAnHour() });
    const res = await status(early, `${PATH}?organization_uuid=org-a`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: expect.any(String) });
  });

  test('a payload tampered to raise its rights (administrator added, signature kept): issue 6', async () => {
    const [h, , s] = (await siteAdminToken('org-a')).split('.');
    const raised = `${h}.${b64({ user_id: 2, org: 'org-b', roles: ['site_admin'], administrator: true, exp: inAnHour() })}.${s}`;
    const res = await status(raised, `${PATH}?organization_uuid=org-b`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: expect.any(String) });
  });

  test('a token without exp (exp is required)', async () => {
    const noExp = await new SignJWT({ user_id: 1, administrator: true }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(TEST_JWT_SECRET));
    expect((await status(noExp)).status).toBe(401);
  });

  test('alg: none, unsigned', async () => {
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ user_id: 1, administrator: true, exp: inAnHour() })}.`;
    expect((await status(unsigned)).status).toBe(401);
  });

  test('another algorithm with the right secret (HS512 where HS256 is configured)', async () => {
    const hs512 = await new SignJWT({ user_id: 1, administrator: true })
      .setProtectedHeader({ alg: 'HS512' })
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    expect((await status(hs512)).status).toBe(401);
  });

  test.each([
    ['no user_id', { administrator: true }],
    ['a string user_id', { user_id: '1', administrator: true }],
    ['a fractional user_id', { user_id: 1.5, administrator: true }],
  ])('a valid token with %s', async (_name, claims) => {
    const res = await status(await token(claims));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Token has no valid user_id claim.' });
  });
});

describe('403: a valid token without the right', () => {
  test.each([
    ['a learner of the organization', { user_id: 4, org: 'org-a' }],
    ['a site administrator of no organization', { user_id: 4, roles: ['site_admin'] }],
    ['the LMS service role', { user_id: 4, org: 'org-a', roles: ['service'] }],
    ['administrator claim that is not true', { user_id: 4, org: 'org-a', administrator: 'yes' }],
    ['platform staff without any organization', { user_id: 4, administrator: true }],
  ])('%s', async (_name, claims) => {
    const res = await status(await token(claims as Record<string, unknown>));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: expect.any(String) });
  });

  test.each([
    ['a learner', { user_id: 4, org: 'org-a' }],
    ['a site administrator, even naming their own organization', { user_id: 4, org: 'org-a', roles: ['site_admin'] }],
    ['the LMS service role', { user_id: 4, roles: ['service'] }],
  ])('organization_uuid from anyone but platform staff: %s', async (_name, claims) => {
    expect((await status(await token(claims), `${PATH}?organization_uuid=org-a`)).status).toBe(403);
  });
});

describe('who may use the admin API', () => {
  test('a site administrator, in their own organization', async () => {
    const res = await status(await siteAdminToken('org-a'));
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(0);
  });

  test('platform staff with organization_uuid, and with an org claim of their own', async () => {
    expect((await status(await staffToken(), `${PATH}?organization_uuid=org-x`)).status).toBe(200);
    expect((await status(await token({ user_id: 1, administrator: true, org: 'org-a' }))).status).toBe(200);
  });

  test('the API works for the organization the request names, not the token', async () => {
    const staff = client(service.baseUrl, await token({ user_id: 1, administrator: true, org: 'org-a' }));
    const created = await staff.post(`${PATH}?organization_uuid=org-z`, { name: 'In Z', description: '' });
    expect(created.status).toBe(201);
    expect((await staff.get(`${PATH}${created.body.id}/?organization_uuid=org-z`)).status).toBe(200);
    expect((await staff.get(`${PATH}${created.body.id}/`)).status).toBe(404);
  });

  test('the OpenAPI document needs no token; a method a path lacks is a 405 before any token check', async () => {
    expect((await client(service.baseUrl).get('openapi.json')).status).toBe(200);
    expect((await client(service.baseUrl).put(PATH, {})).status).toBe(405);
  });
});

describe('issuer and audience, when configured', () => {
  let strict: TestService;
  beforeAll(async () => {
    strict = await startTestService({ JWT_AUDIENCE: 'course-access-groups', JWT_ISSUER: 'https://lms.example.com' });
  });
  afterAll(() => strict.close());

  const signed = (claims: Record<string, unknown>) => token({ user_id: 1, administrator: true, ...claims });
  const call = async (t: string) => (await client(strict.baseUrl, t).get(`${PATH}?organization_uuid=o`)).status;

  test('the right issuer and audience pass', async () => {
    expect(await call(await signed({ iss: 'https://lms.example.com', aud: 'course-access-groups' }))).toBe(200);
    expect(await call(await signed({ iss: 'https://lms.example.com', aud: ['other', 'course-access-groups'] }))).toBe(200);
  });

  test.each([
    ['a wrong audience', { iss: 'https://lms.example.com', aud: 'another-service' }],
    ['no audience', { iss: 'https://lms.example.com' }],
    ['a wrong issuer', { iss: 'https://evil.example.com', aud: 'course-access-groups' }],
    ['no issuer', { aud: 'course-access-groups' }],
  ])('401 for %s', async (_name, claims) => {
    expect(await call(await signed(claims))).toBe(401);
  });
});

describe('public keys: RS256 and ES256 via JWT_PUBLIC_KEY, and a JWKS URL', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = (k: KeyObject) => k.export({ type: 'spki', format: 'pem' }).toString();
  const claims = { user_id: 1, administrator: true };
  const sign = (alg: string, key: KeyObject | Uint8Array, header: Record<string, unknown> = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg, ...header })
      .setExpirationTime('1h')
      .sign(key);
  const call = async (s: TestService, t: string) => (await client(s.baseUrl, t).get(`${PATH}?organization_uuid=o`)).status;

  test('RS256 key: an RS256 token passes; HS256 (with the secret, or with the PEM as secret), ES256 and another RSA key are refused', async () => {
    // The PEM given with escaped newlines, as it often arrives in an environment variable.
    const s = await startTestService({ JWT_SECRET: undefined, JWT_PUBLIC_KEY: pem(rsa.publicKey).replace(/\n/g, '\\n') });
    try {
      expect(await call(s, await sign('RS256', rsa.privateKey))).toBe(200);
      expect(await call(s, await token(claims))).toBe(401);
      expect(await call(s, await sign('HS256', new TextEncoder().encode(pem(rsa.publicKey))))).toBe(401);
      expect(await call(s, await sign('ES256', ec.privateKey))).toBe(401);
      expect(await call(s, await sign('RS256', generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey))).toBe(401);
    } finally {
      await s.close();
    }
  });

  test('ES256 key: an ES256 token passes; RS256 and HS256 are refused', async () => {
    const s = await startTestService({ JWT_SECRET: undefined, JWT_PUBLIC_KEY: pem(ec.publicKey) });
    try {
      expect(await call(s, await sign('ES256', ec.privateKey))).toBe(200);
      expect(await call(s, await sign('RS256', rsa.privateKey))).toBe(401);
      expect(await call(s, await token(claims))).toBe(401);
    } finally {
      await s.close();
    }
  });

  test('JWKS: a token signed by a key of the set passes, other algorithms are refused, an unreachable set is a 503', async () => {
    const jwk = { ...(await exportJWK(rsa.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const ecJwk = { ...(await exportJWK(ec.publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' };
    const server: Server = createServer((_req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk, ecJwk] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
    const s = await startTestService({ JWT_SECRET: undefined, JWT_JWKS_URL: url });
    const down = await startTestService({ JWT_SECRET: undefined, JWT_JWKS_URL: 'http://127.0.0.1:1/jwks.json' });
    try {
      expect(await call(s, await sign('RS256', rsa.privateKey, { kid: 'k1' }))).toBe(200);
      // ES256 is in the set, but the configured algorithm is RS256 (JWT_ALGORITHM's default).
      expect(await call(s, await sign('ES256', ec.privateKey, { kid: 'k2' }))).toBe(401);
      expect(await call(s, await token(claims))).toBe(401);
      expect(await call(down, await sign('RS256', rsa.privateKey, { kid: 'k1' }))).toBe(503);
    } finally {
      await Promise.all([s.close(), down.close()]);
      server.close();
    }
  });
});
