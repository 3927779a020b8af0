// The Helm chart's `helm test` (deploy/helm/course-access-groups/files/access-test.js, run by the
// test Pod with the service's own image) against the real service on the local stack: what the
// Pod would do in a cluster, where no node runs it here (the chart's README).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestService, TEST_JWT_SECRET, type TestService } from '../helpers/stack';

const SCRIPT = path.resolve(__dirname, '../../deploy/helm/course-access-groups/files/access-test.js');
const run = promisify(execFile);
let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.close();
});

/** The script as the Pod runs it (`node -e`), with the Pod's environment. */
async function accessTest(env: Record<string, string>) {
  const { PATH, HOME } = process.env;
  try {
    const { stdout } = await run(process.execPath, [SCRIPT], { env: { PATH, HOME, API_URL: service.baseUrl, ...env } });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

test('with the release JWT_SECRET it signs a service token and gets an access decision', async () => {
  const res = await accessTest({ JWT_SECRET: TEST_JWT_SECRET });
  expect(res).toEqual({ code: 0, out: expect.stringContaining('ok an access decision for a course the release does not know') });
  expect(res.out).toContain('ok an access decision without a token is refused');
});

test('with a wrong secret the decision is refused and the test fails, naming what', async () => {
  const res = await accessTest({ JWT_SECRET: 'not-the-release-secret-at-all' });
  expect(res.code).toBe(1);
  expect(res.out).toMatch(/FAIL an access decision for a course the release does not know: \{"status":401/);
});

test('without a secret (a public key or JWKS verifies tokens) it checks the refusal alone', async () => {
  const res = await accessTest({});
  expect(res.code).toBe(0);
  expect(res.out).toContain('no token can be signed here');
});

test('an API that does not answer fails the test', async () => {
  const res = await accessTest({ API_URL: 'http://127.0.0.1:1' });
  expect(res.code).toBe(1);
  expect(res.out).toContain('FAIL');
});
