// The console's pure helpers (src/console/app/token.ts, query.ts) and `npm run token`'s arguments.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { decodeJwt, jwtVerify } from 'jose';
import { DEV_SECRET, parseArgs } from '../../scripts/token';
import { buildQuery, errorReport, pageSummary, plural } from '../../src/console/app/query';
import { carriesToken, isExpired, parseToken, relativeExpiry, renewalDelaySeconds, roleLabel } from '../../src/console/app/token';
import { siteAdminToken, staffToken, token } from '../helpers/tokens';

describe('parseToken', () => {
  test("a site administrator's token: user, organization, role and expiry", async () => {
    const parsed = parseToken(await siteAdminToken('org-a', 7));
    expect(parsed).toMatchObject({ ok: true, claims: { userId: 7, org: 'org-a', staff: false, siteAdmin: true } });
    if (parsed.ok) {
      expect(parsed.claims.exp).toBeGreaterThan(Date.now() / 1000);
      expect(roleLabel(parsed.claims)).toBe('site administrator');
    }
  });
  test('staff, without an organization; "Bearer " and spaces around are dropped', async () => {
    const raw = await staffToken(3);
    const parsed = parseToken(`  Bearer ${raw}\n`);
    expect(parsed).toMatchObject({ ok: true, token: raw, claims: { userId: 3, org: null, staff: true, siteAdmin: false } });
    if (parsed.ok) expect(roleLabel(parsed.claims)).toBe('platform staff');
  });
  test('an LMS token (docs/api.md): its course_access_groups_admin roles are its organizations; "JWT " is dropped', async () => {
    const one = await token({ user_id: 5, administrator: false, roles: ['enterprise_admin:1', 'course_access_groups_admin:org-a'] });
    expect(parseToken(`JWT ${one}`)).toMatchObject({
      ok: true,
      token: one,
      claims: { org: 'org-a', siteAdmin: true, staff: false, administeredOrgs: ['org-a'] },
    });
    const two = await token({ user_id: 5, roles: ['course_access_groups_admin:org-a', 'course_access_groups_admin:org-b'] });
    expect(parseToken(two)).toMatchObject({ ok: true, claims: { org: null, siteAdmin: true, administeredOrgs: ['org-a', 'org-b'] } });
    const none = await token({ user_id: 5, roles: ['course_access_groups_admin:', 'course_access_groups_admin'] });
    expect(parseToken(none)).toMatchObject({ ok: true, claims: { org: null, siteAdmin: false, administeredOrgs: [] } });
  });
  test('a UTF-8 organization name survives base64url decoding', async () => {
    expect(parseToken(await token({ user_id: 1, org: 'école-ñ', roles: ['site_admin'] }))).toMatchObject({ ok: true, claims: { org: 'école-ñ' } });
  });
  test.each([
    ['not a token', 'This is not a token: a JWT is three parts separated by dots.'],
    ['a.b', 'This is not a token: a JWT is three parts separated by dots.'],
    ['a.b<script>.c', 'This is not a token: a JWT is three parts separated by dots.'],
    [`x.${Buffer.from('not json').toString('base64url')}.y`, 'This token cannot be read: its payload is not JSON.'],
    [`x.${Buffer.from('[1]').toString('base64url')}.y`, 'This token cannot be read: its payload is not an object.'],
    [`x.${Buffer.from('{"exp":9999999999}').toString('base64url')}.y`, 'This token has no user_id claim; the service refuses it.'],
    [`x.${Buffer.from('{"user_id":"7","exp":9999999999}').toString('base64url')}.y`, 'This token has no user_id claim; the service refuses it.'],
    [`x.${Buffer.from('{"user_id":7}').toString('base64url')}.y`, 'This token has no expiry (exp); the service refuses it.'],
  ])('%s is refused with a reason', (raw, error) => {
    expect(parseToken(raw)).toEqual({ ok: false, error });
  });
  test('isExpired compares exp with now, in seconds', () => {
    const claims = { userId: 1, org: null, staff: false, siteAdmin: false, administeredOrgs: [], exp: 1000 };
    expect(isExpired(claims, 999)).toBe(false);
    expect(isExpired(claims, 1000)).toBe(true);
    expect(roleLabel(claims)).toBe('no administrator role');
  });
});

test('carriesToken finds a token in a fragment (an old sign-in link), which the console only drops', () => {
  expect(carriesToken('#token=abc.def.ghi')).toBe(true);
  expect(carriesToken('#/overview&token=abc.def.ghi')).toBe(true);
  expect(carriesToken('#token=a.b.c&route=%23%2Fgroups%2F3&via=lms')).toBe(true);
  expect(carriesToken('#/groups/3')).toBe(false);
  expect(carriesToken('')).toBe(false);
  expect(carriesToken('#tokens=x')).toBe(false);
});

test('renewalDelaySeconds: the lifetime less a fifth, at most 5 minutes, counted from receipt whatever the clocks say', () => {
  const claims = (iat: number | undefined, exp: number) => ({
    userId: 1,
    org: null,
    staff: false,
    siteAdmin: true,
    administeredOrgs: [],
    exp,
    ...(iat === undefined ? {} : { iat }),
  });
  expect(renewalDelaySeconds(claims(1000, 4600), 1000)).toBe(3300); // an hour: 5 minutes before
  expect(renewalDelaySeconds(claims(1000, 1600), 1000)).toBe(480); // 10 minutes: 2 before
  // A browser clock an hour ahead of the LMS's: still 55 minutes after receipt, not at once.
  expect(renewalDelaySeconds(claims(1000, 4600), 4600)).toBe(3300);
  expect(renewalDelaySeconds(claims(undefined, 4600), 1000)).toBe(3300);
  expect(renewalDelaySeconds(claims(undefined, 900), 1000)).toBe(0);
});

test.each([
  [3600, 'in 1 h'],
  [3599, 'in 1 h'],
  [3540, 'in 59 min'],
  [5400, 'in 1 h 30 min'],
  [20, 'in less than a minute'],
  [-180, '3 min ago'],
  [0, 'just now'],
  [86400 * 3, 'in 3 days'],
])('relativeExpiry(now + %i s) is "%s"', (delta, text) => {
  expect(relativeExpiry(1_000_000 + delta, 1_000_000)).toBe(text);
});

describe('buildQuery', () => {
  test('leaves out empty filters, writes booleans and numbers, encodes the rest', () => {
    expect(buildQuery({ search: '', group: undefined, no_group: null, limit: 20, offset: 0 })).toBe('?limit=20&offset=0');
    expect(buildQuery({ is_public: true, no_group: false })).toBe('?is_public=true&no_group=false');
    expect(buildQuery({ email_exact: 'Ada+x@example.com', search: 'a&b=c #d' })).toBe('?email_exact=Ada%2Bx%40example.com&search=a%26b%3Dc+%23d');
    expect(new URLSearchParams(buildQuery({ course_id: 'course-v1:ORG+NUM+RUN' }).slice(1)).get('course_id')).toBe('course-v1:ORG+NUM+RUN');
  });
  test('no parameter, no question mark', () => {
    expect(buildQuery({})).toBe('');
    expect(buildQuery({ search: '' })).toBe('');
  });
});

test('pageSummary and plural', () => {
  expect(pageSummary(45, 20, 20)).toBe('21–40 of 45');
  expect(pageSummary(45, 40, 5)).toBe('41–45 of 45');
  expect(pageSummary(0, 0, 0)).toBe('0 of 0');
  expect(plural(1, 'membership')).toBe('1 membership');
  expect(plural(0, 'course link')).toBe('0 course links');
});

describe('errorReport: DRF bodies split into fields and the rest', () => {
  test('field lists, non_field_errors and detail', () => {
    expect(
      errorReport({
        name: ['This field may not be blank.'],
        domain: ['Bad.', 'Worse.'],
        non_field_errors: ['The fields course, group must make a unique set.'],
      }),
    ).toEqual({
      fields: { name: ['This field may not be blank.'], domain: ['Bad.', 'Worse.'] },
      general: ['The fields course, group must make a unique set.'],
    });
    expect(errorReport({ detail: 'Not found.' })).toEqual({ fields: {}, general: ['Not found.'] });
  });
  test('anything else gives nothing to show per field', () => {
    expect(errorReport(null)).toEqual({ fields: {}, general: [] });
    expect(errorReport('oops')).toEqual({ fields: {}, general: [] });
    expect(errorReport([1])).toEqual({ fields: {}, general: [] });
    expect(errorReport({ name: [1, 2] })).toEqual({ fields: {}, general: [] });
  });
});

describe('npm run token', () => {
  test('--site-admin ORG: a site administrator of ORG, user 1, for an hour', () => {
    expect(parseArgs(['--site-admin', 'org-a'])).toEqual({ claims: { user_id: 1, org: 'org-a', roles: ['site_admin'] }, expires: '1h' });
  });
  test('--staff with --org, --user-id and --expires', () => {
    expect(parseArgs(['--staff', '--org', 'org-b', '--user-id', '42', '--expires', '15m'])).toEqual({
      claims: { user_id: 42, administrator: true, org: 'org-b' },
      expires: '15m',
    });
  });
  test('--service: the LMS backend (the Open edX plugin), for a year', () => {
    expect(parseArgs(['--service', '--expires', '365d'])).toEqual({ claims: { user_id: 1, roles: ['service'] }, expires: '365d' });
  });
  test("prints a token signed with the development secret that the service accepts, and the console's address (no sign-in link)", async () => {
    const root = path.resolve(__dirname, '../..');
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/token.ts', '--site-admin', 'org-a', '--expires', '2h'], {
      cwd: root,
      env: { ...process.env, JWT_SECRET: '', PORT: '8123' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [jwt, link] = out.trim().split('\n');
    const { payload } = await jwtVerify(jwt!, new TextEncoder().encode(DEV_SECRET));
    expect(payload).toMatchObject({ user_id: 1, org: 'org-a', roles: ['site_admin'] });
    expect(payload.exp! - payload.iat!).toBe(7200);
    expect(link).toBe('http://127.0.0.1:8123/course_access_groups/console/');
    expect(decodeJwt(jwt!).administrator).toBeUndefined();
  });
  test.each([
    [[], 'give exactly one of --site-admin ORG, --staff and --service'],
    [['--staff', '--site-admin', 'x'], 'give exactly one of --site-admin ORG, --staff and --service'],
    [['--service', '--staff'], 'give exactly one of --site-admin ORG, --staff and --service'],
    [['--service', '--org', 'x'], '--org goes with --staff'],
    [['--site-admin'], '--site-admin needs a value'],
    [['--site-admin', 'a', '--user-id', '0'], '--user-id is a positive integer'],
    [['--site-admin', 'a', '--expires', 'soon'], '--expires is a number and a unit: 30s, 15m, 1h, 2d'],
    [['--site-admin', 'a', '--admin'], 'unknown argument: --admin'],
  ])('%j is a usage error (exit 2)', (args, message) => {
    const root = path.resolve(__dirname, '../..');
    let status = 0;
    let stderr = '';
    try {
      execFileSync(process.execPath, ['--import', 'tsx', 'scripts/token.ts', ...args], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      ({ status, stderr } = err as { status: number; stderr: string });
    }
    expect(status).toBe(2);
    expect(stderr.split('\n')[0]).toBe(message);
  });
});
