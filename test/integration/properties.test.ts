// docs/api.md, property-based: random JSON bodies, random query strings and random ids sent to every
// endpoint never get a 5xx; every 4xx has the contract's error shape; every 2xx matches the
// OpenAPI document; and the database (every collection of the test database) is unchanged after
// every refused request.
import Ajv, { type ValidateFunction } from 'ajv';
import fc from 'fast-check';
import { makeWorld, type World } from '../helpers/fixtures';
import { client } from '../helpers/http';
import { snapshot } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

/**
 * Random requests per endpoint: 15 in `npm test` (435 across the 29 endpoints, each checked
 * against a snapshot of every collection: 30 took 82 s of a CI run), on a fresh seed each run, so
 * successive CI runs go on exploring where the last stopped; a failure prints its seed and path
 * to replay. PROPERTY_RUNS=200 for a long run.
 */
const RUNS = Number(process.env.PROPERTY_RUNS ?? 15);

let service: TestService;
let a: ReturnType<typeof client>;
let wa: World;
let wb: World;
let doc: any;
const ajv = new Ajv({ strict: false, allErrors: true });
const validators = new Map<string, ValidateFunction>();

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  wa = await makeWorld(service, a, 'org-a', 1);
  wb = await makeWorld(service, client(service.baseUrl, await siteAdminToken('org-b')), 'org-b', 2);
  doc = (await client(service.baseUrl).get('openapi.json')).body;
});
afterAll(() => service.close());

/** DRF's error shapes: {"detail": "..."} or {"<field>": ["<message>", ...], ...}. */
function isErrorShape(body: unknown): boolean {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return false;
  const entries = Object.entries(body);
  if (entries.length === 1 && entries[0]![0] === 'detail') return typeof entries[0]![1] === 'string';
  return entries.length > 0 && entries.every(([, v]) => Array.isArray(v) && v.length > 0 && v.every((m) => typeof m === 'string'));
}

function documentedSchema(docPath: string, method: string, status: number): ValidateFunction {
  const key = `${method} ${docPath} ${status}`;
  let validate = validators.get(key);
  if (!validate) {
    const response = doc.paths[docPath][method.toLowerCase()].responses[String(status)];
    expect({ key, documented: response !== undefined }).toEqual({ key, documented: true });
    validate = ajv.compile(response.content?.['application/json']?.schema ?? { type: 'null' });
    validators.set(key, validate);
  }
  return validate;
}

// Arbitraries.
const FIELDS = ['name', 'description', 'course', 'group', 'user', 'domain', 'ENABLE_COURSE_ACCESS_GROUPS', 'id', '__proto__'];
const PARAMS = ['limit', 'offset', 'search', 'is_public', 'group', 'no_group', 'email_exact', 'organization_uuid', 'format'];
const tricky = fc.constantFrom(
  '',
  '0',
  '1',
  '-1',
  '1.5',
  '1e3',
  'true',
  'True',
  'false',
  'null',
  '.*',
  '(',
  '[',
  '\\',
  '$where',
  '%',
  '\u0000',
  ' ',
  ',',
  'a'.repeat(2000),
);
const patternish = fc.string({ unit: fc.constantFrom(...'.*+?()[]{}|^$\\ ,aZ0%'.split('')), maxLength: 8 });
const value = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 20 }), patternish, tricky, fc.integer().map(String));
/** Mostly valid values, so that a query often gets past validation to the database. */
const mostly = (valid: fc.Arbitrary<string>) => fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: value });
const params = () =>
  fc.record(
    {
      limit: mostly(fc.nat(30).map(String)),
      offset: mostly(fc.nat(10).map(String)),
      search: fc.oneof(patternish, value),
      email_exact: fc.oneof(patternish, value, fc.constantFrom(`user${wa.userId}@example.com`, `USER${wa.userId}@EXAMPLE.COM`)),
      is_public: mostly(fc.constantFrom('true', 'false', 'True', 'False', '1', '0')),
      no_group: mostly(fc.constantFrom('true', 'false', 'True', 'False', '1', '0')),
      group: mostly(fc.constantFrom(wa.groupId, wb.groupId, 0, 99999).map(String)),
      format: value,
    },
    { requiredKeys: [] },
  );
const queryString = () =>
  fc.oneof(
    { weight: 6, arbitrary: params().map((q) => `?${new URLSearchParams(q as Record<string, string>).toString()}`) },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.tuple(fc.constantFrom(...PARAMS), value), { maxLength: 4 })
        .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`),
    },
    { weight: 1, arbitrary: fc.constantFrom('', '?', '?%', '?limit=%zz', '?search=%E0%A4%A', '?group=1&group=x', '?=&&=') },
  );
const bodyValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.dictionary(fc.constantFrom(...FIELDS), fc.oneof(fc.jsonValue({ maxDepth: 1 }), tricky, fc.integer({ min: -2, max: 40 })), { maxKeys: 4 }),
);
const rawBody = fc.oneof(
  bodyValue.map((v) => JSON.stringify(v) ?? 'null'),
  fc.string({ maxLength: 30 }), // mostly malformed JSON
);
const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/json; charset=latin1', 'application/x-www-form-urlencoded') },
);
const intId = () =>
  fc.oneof(
    fc.constantFrom(wa.groupId, wa.groupCourseId, wa.publicCourseId, wa.membershipId, wa.ruleId, wa.userId, wb.groupId, wb.membershipId, wb.userId).map(String),
    fc.integer({ min: -5, max: 3000 }).map(String),
    // '.' and '..' are path segments the client resolves before sending (a list, not an item).
    fc
      .string({ maxLength: 12 })
      .map(encodeURIComponent)
      .filter((s) => s !== '.' && s !== '..'),
    fc.constantFrom('%', '%zz', '1%2F2', '0', '00', '9007199254740993', '1.0'),
  );
const courseId = () =>
  fc.oneof(
    fc.constantFrom(wa.courseKey, wa.freeCourseKey, wb.courseKey).map(encodeURIComponent),
    fc.constantFrom(wa.courseKey, wb.freeCourseKey),
    fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
    fc.constantFrom('%', '%E0%A4%A', 'a%2Fb', '..'),
  );

interface Endpoint {
  method: string;
  docPath: string;
  id?: () => fc.Arbitrary<string>;
  body?: boolean;
  query?: boolean;
}
const item = (r: string) => `/${r}/{id}/`;
const list = (r: string) => `/${r}/`;
const endpoints: [string, Endpoint][] = [];
for (const r of ['course-access-groups', 'group-courses', 'public-courses', 'memberships', 'membership-rules', 'courses', 'users']) {
  const readOnly = r === 'courses' || r === 'users';
  endpoints.push([`GET ${list(r)}`, { method: 'GET', docPath: list(r), query: true }]);
  endpoints.push([`GET ${item(r)}`, { method: 'GET', docPath: item(r), id: r === 'courses' ? courseId : intId }]);
  if (readOnly) continue;
  endpoints.push([`POST ${list(r)}`, { method: 'POST', docPath: list(r), body: true }]);
  if (r !== 'public-courses') endpoints.push([`PATCH ${item(r)}`, { method: 'PATCH', docPath: item(r), id: intId, body: true }]);
  endpoints.push([`DELETE ${item(r)}`, { method: 'DELETE', docPath: item(r), id: intId }]);
}
endpoints.push(['GET /site-configuration/', { method: 'GET', docPath: '/site-configuration/', query: true }]);
endpoints.push(['PATCH /site-configuration/', { method: 'PATCH', docPath: '/site-configuration/', body: true }]);

test.each(endpoints)('%s: no 5xx, error shapes, documented successes, nothing written when refused', async (_name, ep) => {
  let before = await snapshot(service.db);
  const request = fc.record({
    id: ep.id ? ep.id() : fc.constant(''),
    query: ep.query ? queryString() : fc.oneof(fc.constant(''), queryString()),
    body: ep.body ? rawBody : fc.constant(undefined),
    type: contentType,
  });
  await fc.assert(
    fc.asyncProperty(request, async ({ id, query, body, type }) => {
      const path = `${ep.docPath.slice(1).replace('{id}', id)}${query}`;
      const res = await a.call(ep.method, path, body, body === undefined ? {} : { 'Content-Type': type });
      const context = { request: `${ep.method} ${path}`, status: res.status, body: res.body };
      expect({ ...context, serverError: res.status >= 500 }).toEqual({ ...context, serverError: false });
      const after = await snapshot(service.db);
      if (res.status >= 400) {
        expect({ ...context, errorShape: isErrorShape(res.body) }).toEqual({ ...context, errorShape: true });
        expect(after).toEqual(before);
      } else {
        const validate = documentedSchema(ep.docPath, ep.method, res.status);
        expect({ ...context, documented: validate(res.body), errors: validate.errors }).toEqual({ ...context, documented: true, errors: null });
        before = after;
      }
    }),
    { numRuns: RUNS },
  );
});
