// docs/api.md, "the LMS's tokens": the service takes the LMS's own JWTs exactly as the LMS's
// decoder takes them. test/helpers/lms_jwt_oracle.py (the plugin's Python 3.11 environment, at
// edx-platform's pins) mints every token as edx-platform's oauth_dispatch/jwt.py `_create_jwt` +
// `_encode_and_sign` do and decides it with the real edx-drf-extensions `jwt_decode_handler` and
// `NotJwtRestrictedApplication`, configured as Tutor configures the LMS; the service, configured
// with the same issuer list and public key set (and no JWT_* key), must answer each token as the
// oracle does, through `Authorization: JWT` and `Bearer`.
import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { importJWK, SignJWT } from 'jose';
import { client } from '../helpers/http';
import { startTestService, type TestService } from '../helpers/stack';
import { staffToken } from '../helpers/tokens';

const ROOT = path.resolve(__dirname, '../..');
const PATH = 'course-access-groups/';

interface OracleCase {
  name: string;
  token: string;
  verdict: 'ok' | 'invalid' | 'restricted';
}
interface Oracle {
  issuers: string;
  publicKeySet: string;
  privateJwk: string;
  cases: OracleCase[];
}

/** The LMS's answer as an HTTP status: DRF's 401 for a token the decoder refuses, 403 for a restricted application's. */
const STATUS = { ok: 200, invalid: 401, restricted: 403 } as const;
/** The one documented difference (docs/decisions.md): the LMS takes its own HS256 tokens; the service holds no LMS secret. */
const NEVER_THE_LMS_SECRET = "HS256 with the LMS's secret";

let oracle: Oracle;
let lmsOnly: TestService;

beforeAll(async () => {
  const python = execFileSync('bash', [path.join(ROOT, 'scripts/openedx-plugin.sh'), '3.11'], { encoding: 'utf8' }).trim();
  const { stdout } = await promisify(execFile)(python, [path.join(ROOT, 'test/helpers/lms_jwt_oracle.py')], { maxBuffer: 1 << 24 });
  oracle = JSON.parse(stdout);
  lmsOnly = await startTestService({
    JWT_SECRET: undefined,
    LMS_JWT_ISSUERS: oracle.issuers,
    LMS_JWT_PUBLIC_SIGNING_JWK_SET: oracle.publicKeySet,
  });
}, 180_000);
afterAll(() => lmsOnly?.close());

const call = async (service: TestService, scheme: 'JWT' | 'Bearer', token: string, query = '?organization_uuid=org-a') =>
  (await client(service.baseUrl).get(`${PATH}${query}`, { Authorization: `${scheme} ${token}` })).status;

test('every token the oracle decides, the service decides alike, through JWT and Bearer', async () => {
  expect(oracle.cases.length).toBeGreaterThanOrEqual(20);
  const expected: string[] = [];
  const actual: string[] = [];
  for (const c of oracle.cases) {
    if (c.name === NEVER_THE_LMS_SECRET) continue;
    for (const scheme of ['JWT', 'Bearer'] as const) {
      expected.push(`${scheme} ${c.name}: ${STATUS[c.verdict]}`);
      actual.push(`${scheme} ${c.name}: ${await call(lmsOnly, scheme, c.token)}`);
    }
  }
  expect(actual).toEqual(expected);
  // The cases the issue lists are all there, and the oracle refuses what it must.
  const verdicts = Object.fromEntries(oracle.cases.map((c) => [c.name, c.verdict]));
  expect(verdicts).toMatchObject({
    'valid, no kid (the default)': 'ok',
    'valid, kid (JWT_AUTH_ADD_KID_HEADER)': 'ok',
    'rotated set: the old key, no kid': 'ok',
    'expired inside the leeway (exp is this second)': 'invalid',
    'expired outside the leeway (30 s ago)': 'invalid',
    'a wrong issuer': 'invalid',
    'a wrong audience': 'invalid',
    "HS256 signed with the public key's PEM bytes": 'invalid',
    'alg none': 'invalid',
    'restricted (is_restricted true)': 'restricted',
    'version 2.0.0': 'invalid',
  });
});

/** The oracle's cases whose names begin with `prefix`: each verdict as the LMS's status, beside the service's, through `Authorization: JWT`. */
async function alike(prefix: string) {
  const cases = oracle.cases.filter((c) => c.name.startsWith(prefix));
  const expected = cases.map((c) => `${c.name}: ${STATUS[c.verdict]}`);
  const actual = await Promise.all(cases.map(async (c) => `${c.name}: ${await call(lmsOnly, 'JWT', c.token)}`));
  return { cases, expected, actual };
}

// edx_rest_framework_extensions/permissions.py, JwtRestrictedApplication.has_permission:
// `is_jwt_authenticated(request) and decode_jwt_is_restricted(request.auth)` is the condition
// NotJwtRestrictedApplication negates, so the claim's Python truthiness decides.
test('is_restricted: any value Python takes as true (a non-empty string, even "false", a non-zero number, a non-empty list or object) is refused, 403, as upstream refuses it; false, 0, "", [], {} and null are not', async () => {
  const { cases, expected, actual } = await alike('is_restricted ');
  expect(cases).toHaveLength(13);
  expect(actual).toEqual(expected);
  const verdicts = Object.fromEntries(cases.map((c) => [c.name, c.verdict]));
  expect(verdicts).toMatchObject({ 'is_restricted "false" (a non-empty string)': 'restricted', 'is_restricted 1': 'restricted', 'is_restricted null': 'ok' });
});

// edx_rest_framework_extensions/auth/jwt/decoder.py, _set_token_defaults._get_and_set_version:
// only a token without `version` gets '1.0.0'; `version: null` reaches semantic_version's
// Version(None), which raises, and the LMS refuses the token (the oracle: "invalid").
test('version null (or a number) is refused, 401, as upstream refuses it; only an absent version counts as 1.0.0', async () => {
  const { cases, expected, actual } = await alike('version ');
  expect(cases.map((c) => c.name)).toEqual(expect.arrayContaining(['version null', 'version 1 (a number)']));
  expect(actual).toEqual(expected);
  expect(Object.fromEntries(cases.map((c) => [c.name, c.verdict]))).toMatchObject({ 'version null': 'invalid', 'version 1 (a number)': 'invalid' });
  expect(oracle.cases.find((c) => c.name === 'no version (1.0.0 assumed)')?.verdict).toBe('ok');
});

test("the LMS's own HS256 token: the LMS takes it, the service never does", async () => {
  const hs256 = oracle.cases.find((c) => c.name === NEVER_THE_LMS_SECRET)!;
  expect(hs256.verdict).toBe('ok');
  expect(await call(lmsOnly, 'JWT', hs256.token)).toBe(401);
  expect(await call(lmsOnly, 'Bearer', hs256.token)).toBe(401);
});

describe('who an LMS token is', () => {
  const issuer = () => JSON.parse(oracle.issuers)[0] as { ISSUER: string; AUDIENCE: string };
  /** A token as `_create_jwt` shapes it (the oracle proved that shape passes), signed with the LMS's current key. */
  const lmsToken = async (claims: Record<string, unknown>) =>
    new SignJWT({ version: '1.2.0', is_restricted: false, filters: [], scopes: ['user_id', 'email', 'profile'], ...claims })
      .setProtectedHeader({ alg: 'RS512' })
      .setIssuer(issuer().ISSUER)
      .setAudience(issuer().AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(await importJWK(JSON.parse(oracle.privateJwk), 'RS512'));
  const as = async (claims: Record<string, unknown>) => client(lmsOnly.baseUrl, await lmsToken({ administrator: false, ...claims }));

  test("an organization's administrator: 200 on it, 403 on another, also by organization_uuid", async () => {
    const admin = await as({ user_id: 21, roles: ['course_access_groups_admin:org-a'] });
    expect((await admin.get(PATH)).status).toBe(200);
    expect((await admin.get(`${PATH}?organization_uuid=org-a`)).status).toBe(200);
    expect((await admin.get(`${PATH}?organization_uuid=org-b`)).status).toBe(403);
    const created = await admin.post(PATH, { name: 'From the LMS', description: '' });
    expect(created.status).toBe(201);
    const staff = await as({ user_id: 22, administrator: true });
    expect((await staff.get(`${PATH}${created.body.id}/?organization_uuid=org-a`)).status).toBe(200);
    expect((await staff.get(`${PATH}${created.body.id}/?organization_uuid=org-b`)).status).toBe(404);
  });

  test('an administrator of several organizations names one; no other is reachable', async () => {
    const admin = await as({ user_id: 23, roles: ['course_access_groups_admin:org-a', 'course_access_groups_admin:org-b'] });
    const unnamed = await admin.get(PATH);
    expect(unnamed.status).toBe(403);
    expect(unnamed.body.detail).toMatch(/several organizations.*organization_uuid/);
    expect((await admin.get(`${PATH}?organization_uuid=org-b`)).status).toBe(200);
    expect((await admin.get(`${PATH}?organization_uuid=org-c`)).status).toBe(403);
  });

  test('platform staff (administrator: true, a service user too) may name any organization and ask access decisions', async () => {
    const staff = await as({ user_id: 24, administrator: true, grant_type: 'client-credentials', scopes: ['user_id', 'profile'] });
    expect((await staff.get(`${PATH}?organization_uuid=org-z`)).status).toBe(200);
    expect((await staff.get(PATH)).status).toBe(403); // staff with no organization named: which one?
    const batch = await staff.post('access/batch/', { action: 'course.enroll', user_id: 5, course_ids: ['course-v1:Z+NONE+1'] });
    expect(batch.status).toBe(200);
    expect(batch.body.results).toEqual([{ course_id: 'course-v1:Z+NONE+1', allowed: false, reason: 'unknown_course' }]);
  });

  test("the LMS plugin's role (course_access_groups_service on a client-credentials token): decisions 200, every admin call 403, for any organization", async () => {
    const plugin = await as({ user_id: 29, roles: ['course_access_groups_service'], grant_type: 'client-credentials', scopes: ['user_id', 'profile'] });
    const decision = await plugin.get('access/?course_id=course-v1:Z+NONE+1&action=course.enroll&user_id=5');
    expect(decision.status).toBe(404); // a decision was made: the course is unknown (the plugin's "refused")
    const batch = await plugin.post('access/batch/', { action: 'course.enroll', user_id: 5, course_ids: ['course-v1:Z+NONE+1'] });
    expect(batch.status).toBe(200);
    expect(batch.body.results).toEqual([{ course_id: 'course-v1:Z+NONE+1', allowed: false, reason: 'unknown_course' }]);
    for (const org of ['org-a', 'org-b']) {
      expect((await plugin.post(`${PATH}?organization_uuid=${org}`, { name: 'By the plugin', description: '' })).status).toBe(403);
      expect((await plugin.get(`${PATH}?organization_uuid=${org}`)).status).toBe(403);
    }
    expect((await plugin.post(PATH, { name: 'By the plugin', description: '' })).status).toBe(403);
    // The same role on a user's own token (the console's authorization-code grant) is no service.
    const user = await as({ user_id: 30, roles: ['course_access_groups_service'], grant_type: 'authorization-code' });
    expect((await user.post('access/batch/', { action: 'course.enroll', user_id: 5, course_ids: ['course-v1:Z+NONE+1'] })).status).toBe(403);
  });

  test("iat a little ahead of this service's clock (the LMS's JWT_LEEWAY, 1 s) is taken; further ahead it is refused", async () => {
    const key = await importJWK(JSON.parse(oracle.privateJwk), 'RS512');
    /** Signed and sent in the first 300 ms of a second, with `iat` that many seconds later: `seconds - 0.3` to `seconds` ahead. */
    const ahead = async (seconds: number) => {
      while (Date.now() % 1000 > 300) await new Promise((r) => setTimeout(r, 20));
      const now = Date.now() / 1000;
      const token = await new SignJWT({ version: '1.2.0', is_restricted: false, filters: [], scopes: ['user_id', 'profile'], user_id: 31, administrator: true })
        .setProtectedHeader({ alg: 'RS512' })
        .setIssuer(issuer().ISSUER)
        .setAudience(issuer().AUDIENCE)
        .setIssuedAt(Math.floor(now) + seconds)
        .setExpirationTime(Math.floor(now + 300))
        .sign(key);
      return (await client(lmsOnly.baseUrl, token).get(`${PATH}?organization_uuid=org-a`)).status;
    };
    expect(await ahead(0)).toBe(200);
    expect(await ahead(1)).toBe(200); // 0.7 to 1 s ahead: refused with no leeway
    expect(await ahead(3)).toBe(401);
  });

  test.each([
    ['no role at all (a learner)', { user_id: 25 }],
    ["the service's own role names, which only the service's keys may grant", { user_id: 26, roles: ['site_admin', 'service'], org: 'org-a' }],
    [
      'roles of other services and a bare prefix',
      { user_id: 27, roles: ['enterprise_admin:org-a', 'course_access_groups_admin', 'course_access_groups_admin:'] },
    ],
    ['administrator that is not true', { user_id: 28, administrator: 'true', superuser: true }],
  ])('unknown roles are ignored: %s gets 403 on the admin API and the access API', async (_name, claims) => {
    const caller = await as(claims);
    expect((await caller.get(PATH)).status).toBe(403);
    expect((await caller.get(`${PATH}?organization_uuid=org-a`)).status).toBe(403);
    expect((await caller.post('access/batch/', { action: 'course.enroll', user_id: 5, course_ids: ['course-v1:A+X+1'] })).status).toBe(403);
  });

  test('a token without user_id is 401, as a service token without one', async () => {
    expect((await client(lmsOnly.baseUrl, await lmsToken({ administrator: true })).get(`${PATH}?organization_uuid=org-a`)).status).toBe(401);
  });

  test("with only the LMS's trust path, a token signed with a service key is refused", async () => {
    expect((await client(lmsOnly.baseUrl, await staffToken()).get(`${PATH}?organization_uuid=org-a`)).status).toBe(401);
  });

  test('both trust paths side by side: each token goes to its own, by issuer', async () => {
    const both = await startTestService({ LMS_JWT_ISSUERS: oracle.issuers, LMS_JWT_PUBLIC_SIGNING_JWK_SET: oracle.publicKeySet });
    try {
      const valid = oracle.cases.find((c) => c.name === 'valid, no kid (the default)')!.token;
      expect(await call(both, 'JWT', valid)).toBe(200);
      expect((await client(both.baseUrl, await staffToken()).get(`${PATH}?organization_uuid=org-a`)).status).toBe(200);
      // The LMS's HS256 token names the LMS's issuer: it goes to the LMS's path, which takes no HS256.
      expect(await call(both, 'Bearer', oracle.cases.find((c) => c.name === NEVER_THE_LMS_SECRET)!.token)).toBe(401);
    } finally {
      await both.close();
    }
  });
});
