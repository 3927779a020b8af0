// SPEC §6 on a real child process: JSON request logs with no token or email, and SIGTERM
// (stop taking requests, finish what is in flight, exit 0 within 10 seconds).
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import path from 'node:path';
import { client, slowPost } from '../helpers/http';
import { KAFKA_BROKERS, MONGO_URL, TEST_JWT_SECRET, uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

const ROOT = path.resolve(__dirname, '../..');
const PORT = 18731;
let child: ChildProcess;
let stdout = '';
let exit: Promise<{ code: number | null; at: number }>;

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: String(PORT),
      MONGO_URL,
      MONGO_DB: uniqueName('proc'),
      KAFKA_BROKERS,
      KAFKA_GROUP_ID: uniqueName('g'),
      KAFKA_TOPICS: uniqueName('topic'),
      JWT_SECRET: TEST_JWT_SECRET,
      LOG_LEVEL: 'info',
      SERVICE_ROLE: 'all',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stdout += d));
  exit = new Promise((resolve) => child.on('exit', (code) => resolve({ code, at: Date.now() })));
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${PORT}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`service did not become ready:\n${stdout}`);
}, 40000);
afterAll(() => {
  if (child.exitCode === null) child.kill('SIGKILL');
});

test('each request logs one JSON line with request id, method, route, status and duration; no token or email', async () => {
  const token = await siteAdminToken('org-log');
  const api = client(`http://127.0.0.1:${PORT}`, token);
  await api.post('course-access-groups/', { name: 'Logged', description: 'x' }, { 'X-Request-Id': 'log-test-1' });
  await api.get('course-access-groups/?search=someone%40example.com', { 'X-Request-Id': 'log-test-2' });
  await new Promise((r) => setTimeout(r, 200));
  const lines = stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const request = lines.find((l) => l.request_id === 'log-test-1' && l.msg === 'request');
  expect(request).toMatchObject({ method: 'POST', route: '/course_access_groups/api/v1/course-access-groups', status: 201 });
  expect(typeof request.duration_ms).toBe('number');
  expect(stdout).not.toContain(token);
  expect(stdout).not.toContain(token.split('.')[1]);
  expect(stdout).not.toMatch(/example\.com/);
});

test('SIGTERM: requests in flight complete, new connections are refused, exit code 0 within 10 s', async () => {
  const token = await siteAdminToken('org-term');
  const inFlight = Array.from({ length: 5 }, (_, i) =>
    slowPost(PORT, '/course_access_groups/api/v1/course-access-groups/', token, JSON.stringify({ name: `g${i}`, description: '' })),
  );
  await Promise.all(inFlight.map((r) => r.connected));
  await new Promise((r) => setTimeout(r, 200)); // the server has read their headers
  const signalledAt = Date.now();
  child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  // A new TCP connection is refused (fetch could reuse a pooled one, which the grace serves).
  const refused = await new Promise<string>((resolve) => {
    const socket = connect(PORT, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
  expect(refused).toBe('ECONNREFUSED');
  for (const r of inFlight) r.finish();
  expect(await Promise.all(inFlight.map((r) => r.response))).toEqual([201, 201, 201, 201, 201]);
  const { code, at } = await exit;
  expect(code).toBe(0);
  expect(at - signalledAt).toBeLessThan(10000);
  expect(stdout).toMatch(/"msg":"stopped"/);
}, 30000);
