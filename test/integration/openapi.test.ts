// docs/operations.md: the OpenAPI 3.1 document, served without a token, generated from the same JSON Schemas
// that validate requests; checked against the OpenAPI 3.1 schema by a validator package.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import Router from '@koa/router';
import Ajv from 'ajv';
import { adminFeatures, openFeatures } from '../../src/features';
import { groupCreateSchema } from '../../src/features/groups/schema';
import { ruleCreateSchema } from '../../src/features/membership-rules/schema';
import { userListQuerySchema } from '../../src/features/users/schema';
import type { AppDeps } from '../../src/http/feature';
import { makeWorld } from '../helpers/fixtures';
import { client } from '../helpers/http';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
let doc: any;
beforeAll(async () => {
  service = await startTestService();
  const res = await client(service.baseUrl).get('openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  doc = res.body;
});
afterAll(() => service.close());

/**
 * @seriousme/openapi-schema-validator (OpenAPI 2.0, 3.0, 3.1 and 3.2 schemas) is an ES module and
 * Jest runs CommonJS here, so it runs in a child Node process reading the document on stdin.
 */
function validateOpenApi(document: unknown): { valid: boolean; version: string; errors?: unknown } {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(input));
    process.stdout.write(JSON.stringify({ ...result, version: validator.version }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    input: JSON.stringify(document),
    cwd: path.resolve(__dirname, '../..'),
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

test('the served document is valid OpenAPI 3.1', () => {
  const result = validateOpenApi(doc);
  expect(result.errors).toBeUndefined();
  expect(result).toMatchObject({ valid: true, version: '3.1' });
});

test('the validator does refuse a broken 3.1 document (so the check above can fail)', () => {
  const broken = structuredClone(doc);
  broken.paths['/course-access-groups/'].get.responses = { '200': { content: 'not an object' } };
  expect(validateOpenApi(broken).valid).toBe(false);
});

test('every route the API registers is documented with its methods, and nothing else is', () => {
  const router = new Router();
  for (const feature of [...adminFeatures, ...openFeatures]) feature.register(router, { config: { ACCESS_CACHE: 'off' } } as AppDeps);
  const routes = new Set<string>();
  for (const layer of router.stack) {
    const documented = `${String(layer.path).replace(/:(\w+)/g, '{$1}')}/`;
    for (const method of layer.methods) if (method !== 'HEAD') routes.add(`${method} ${documented}`);
  }
  const operations = new Set<string>();
  for (const [p, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) if (item[method]) operations.add(`${method.toUpperCase()} ${p}`);
  }
  expect([...operations].sort()).toEqual([...routes].sort());
  expect(operations.size).toBe(34); // 5 + 2 + 5 + 4 + 5 + 2 + 6 (rules: apply) + 2 + access 2 + audit-log 1
});

test('the bearer scheme applies to every operation; each answers 401/403 and has a unique operationId', () => {
  expect(doc.components.securitySchemes.bearerAuth).toEqual({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  expect(doc.security).toEqual([{ bearerAuth: [] }]);
  const ids: string[] = [];
  for (const [p, item] of Object.entries<any>(doc.paths)) {
    const pathParams = (item.parameters ?? []).filter((x: any) => x.in === 'path').map((x: any) => x.name);
    expect(pathParams).toEqual([...p.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
    for (const method of ['get', 'post', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      ids.push(op.operationId);
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403', '503']));
      const organization = [...(item.parameters ?? []), ...(op.parameters ?? [])].some((x: any) => x.name === 'organization_uuid');
      expect({ op: op.operationId, organization }).toEqual({ op: op.operationId, organization: true });
      if (method === 'post' || method === 'patch') {
        expect(op.requestBody.content['application/json'].schema).toBeDefined();
        expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '413', '415']));
      }
    }
  }
  expect(new Set(ids).size).toBe(ids.length);
});

test('request bodies and query parameters are the very schemas that validate requests', () => {
  expect(doc.paths['/course-access-groups/'].post.requestBody.content['application/json'].schema).toEqual(groupCreateSchema);
  expect(doc.paths['/membership-rules/'].post.requestBody.content['application/json'].schema).toEqual(ruleCreateSchema);
  const users = doc.paths['/users/'].get.parameters;
  expect(users.map((p: any) => p.name).sort()).toEqual(Object.keys(userListQuerySchema.properties).sort());
  const { description: _d, ...noGroup } = userListQuerySchema.properties.no_group;
  expect(users.find((p: any) => p.name === 'no_group')).toMatchObject({ in: 'query', required: false, schema: noGroup });
  const courses = doc.paths['/courses/'].get.parameters.map((p: any) => p.name).sort();
  expect(courses).toEqual(['group', 'is_public', 'limit', 'no_group', 'offset', 'organization_uuid', 'search']);
});

test('real responses match the documented 200/201 schemas', async () => {
  const a = client(service.baseUrl, await siteAdminToken('org-doc'));
  const w = await makeWorld(service, a, 'org-doc', 7);
  const ajv = new Ajv({ strict: false, allErrors: true });
  const check = async (p: string, docPath: string, method = 'get', body?: unknown) => {
    const res = await a.call(method.toUpperCase(), p, body);
    const status = method === 'post' ? '201' : '200';
    expect(String(res.status)).toBe(status);
    const schema = doc.paths[docPath][method].responses[status].content['application/json'].schema;
    const validate = ajv.compile(schema);
    expect({ path: p, valid: validate(res.body), errors: validate.errors }).toEqual({ path: p, valid: true, errors: null });
  };
  for (const r of ['course-access-groups', 'courses', 'group-courses', 'public-courses', 'memberships', 'users', 'membership-rules']) {
    await check(`${r}/`, `/${r}/`);
  }
  await check(`course-access-groups/${w.groupId}/`, '/course-access-groups/{id}/');
  await check(`courses/${encodeURIComponent(w.courseKey)}/`, '/courses/{id}/');
  await check(`courses/${encodeURIComponent(w.freeCourseKey)}/`, '/courses/{id}/');
  await check(`group-courses/${w.groupCourseId}/`, '/group-courses/{id}/');
  await check(`public-courses/${w.publicCourseId}/`, '/public-courses/{id}/');
  await check(`memberships/${w.membershipId}/`, '/memberships/{id}/');
  await check(`users/${w.userId}/`, '/users/{id}/');
  await check(`users/${w.freeUserId}/`, '/users/{id}/');
  await check(`membership-rules/${w.ruleId}/`, '/membership-rules/{id}/');
  await check('site-configuration/', '/site-configuration/');
  await check('site-configuration/', '/site-configuration/', 'patch', { ENABLE_COURSE_ACCESS_GROUPS: true });
  await check('course-access-groups/', '/course-access-groups/', 'post', { name: 'More', description: '' });
});
