// docs/api.md: POST and PATCH need Content-Type application/json (415), a JSON object body (400,
// also for malformed JSON) and at most 1 MiB (413); nothing is written when a request is refused.
// Checked on every endpoint that takes a body.
import { makeWorld, type World } from '../helpers/fixtures';
import { client } from '../helpers/http';
import { snapshot } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let w: World;

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  w = await makeWorld(service, a, 'org-a', 1);
});
afterAll(() => service.close());

const endpoints: [string, string, () => string][] = [
  ['POST', 'course-access-groups/', () => 'course-access-groups/'],
  ['POST', 'group-courses/', () => 'group-courses/'],
  ['POST', 'public-courses/', () => 'public-courses/'],
  ['POST', 'memberships/', () => 'memberships/'],
  ['POST', 'membership-rules/', () => 'membership-rules/'],
  ['PATCH', 'course-access-groups/{id}/', () => `course-access-groups/${w.groupId}/`],
  ['PATCH', 'group-courses/{id}/', () => `group-courses/${w.groupCourseId}/`],
  ['PATCH', 'memberships/{id}/', () => `memberships/${w.membershipId}/`],
  ['PATCH', 'membership-rules/{id}/', () => `membership-rules/${w.ruleId}/`],
  ['PATCH', 'site-configuration/', () => 'site-configuration/'],
];

async function expectRefused(method: string, path: string, body: string, headers: Record<string, string>, status: number) {
  const before = await snapshot(service.db);
  const res = await a.call(method, path, body, headers);
  expect(res.status).toBe(status);
  expect(await snapshot(service.db)).toEqual(before);
  return res.body;
}

describe.each(endpoints)('%s %s', (method, _name, path) => {
  test.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml'])(
    'Content-Type %s is a 415 {"detail"}',
    async (type) => {
      expect(await expectRefused(method, path(), '{}', { 'Content-Type': type }, 415)).toEqual({ detail: expect.any(String) });
    },
  );

  test('malformed JSON is a 400 {"detail"}', async () => {
    expect(await expectRefused(method, path(), '{"name": ', {}, 400)).toEqual({ detail: expect.stringMatching(/^JSON parse error/) });
    expect(await expectRefused(method, path(), '', {}, 400)).toEqual({ detail: expect.stringMatching(/^JSON parse error/) });
  });

  test.each([
    ['[]', 'list'],
    ['null', 'null'],
    ['42', 'number'],
    ['"text"', 'string'],
    ['true', 'boolean'],
  ])('a JSON %s body is a 400 non_field_errors', async (body, got) => {
    expect(await expectRefused(method, path(), body, {}, 400)).toEqual({
      non_field_errors: [`Invalid data. Expected a dictionary, but got ${got}.`],
    });
  });

  test('a body over 1 MiB is a 413; at the limit it is read', async () => {
    const pad = (size: number) => `{"pad":"${'x'.repeat(size - 10)}"}`;
    expect(pad(1024 * 1024 + 1).length).toBe(1024 * 1024 + 1);
    expect(await expectRefused(method, path(), pad(1024 * 1024 + 1), {}, 413)).toEqual({ detail: expect.any(String) });
    const atLimit = await a.call(method, path(), pad(1024 * 1024), {});
    expect([200, 201, 400]).toContain(atLimit.status);
  });

  test('application/json with a charset is accepted', async () => {
    const res = await a.call(method, path(), '{}', { 'Content-Type': 'application/json; charset=utf-8' });
    expect([200, 400]).toContain(res.status);
  });
});

test('an idle connection is kept 65 s, longer than a proxy in front keeps one (60 s), so the proxy closes it first', async () => {
  const { request, Agent } = await import('node:http');
  const agent = new Agent({ keepAlive: true });
  const header = await new Promise<string | undefined>((resolve, reject) => {
    const req = request(`${service.baseUrl}/healthz`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(String(res.headers['keep-alive'])));
    });
    req.on('error', reject);
    req.end();
  });
  agent.destroy();
  expect(header).toBe('timeout=65');
});
