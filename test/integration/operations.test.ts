// docs/operations.md's endpoints, served by every process whatever its role, and issue #2's HTTP checks.

import type { AddressInfo } from 'node:net';
import { createServer, type Socket } from 'node:net';
import { client } from '../helpers/http';
import { startTestService, type TestService } from '../helpers/stack';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

test('GET /healthz answers 200', async () => {
  const res = await client(service.baseUrl).get('/healthz');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ status: 'ok' });
});

test('GET /readyz answers 200 with the stack up', async () => {
  const res = await client(service.baseUrl).get('/readyz');
  expect(res.body).toEqual({ status: 'ready' });
  expect(res.status).toBe(200);
});

test('GET /readyz answers 503 naming the database when it is unreachable', async () => {
  // A second instance whose database URL points at a closed port.
  const broken = await startTestService({ MONGO_URL: 'mongodb://127.0.0.1:1/' }, { waitReady: false });
  try {
    const res = await client(broken.baseUrl).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body.failing).toContain('database');
    expect(typeof res.body.detail).toBe('string');
  } finally {
    await broken.close();
  }
});

/** A TCP server that accepts connections and never answers: a dependency that hangs. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe.each([
  ['refuse connections', async () => ({ db: 'mongodb://127.0.0.1:1/', broker: '127.0.0.1:2', close: async () => undefined })],
  [
    'accept connections and never answer',
    async () => {
      const [db, broker] = await Promise.all([silentServer(), silentServer()]);
      return {
        db: `mongodb://127.0.0.1:${db.port}/`,
        broker: `127.0.0.1:${broker.port}`,
        close: async () => void (await Promise.all([db.close(), broker.close()])),
      };
    },
  ],
])('with a database and a broker that %s', (_what, dependencies) => {
  test.each(['api', 'consumer'])(
    'SERVICE_ROLE=%s answers /readyz 503 within 3 s, every time, naming what its role needs',
    async (role) => {
      const deps = await dependencies();
      const broken = await startTestService({ SERVICE_ROLE: role, MONGO_URL: deps.db, KAFKA_BROKERS: deps.broker }, { waitReady: false });
      try {
        // The first probe, and one that finds a connection attempt still under way.
        for (let i = 0; i < 2; i++) {
          const started = Date.now();
          const res = await client(broken.baseUrl).get('/readyz');
          expect(Date.now() - started).toBeLessThan(3000);
          expect(res.status).toBe(503);
          // SPEC §6: only a consuming process needs the broker.
          expect(res.body.failing).toEqual(role === 'api' ? ['database'] : expect.arrayContaining(['database', 'broker']));
          await new Promise((r) => setTimeout(r, 500));
        }
      } finally {
        await broken.close();
        await deps.close();
      }
    },
    30000,
  );
});

test('a consumer-only process serves /healthz, /readyz and /metrics on its PORT, and nothing else', async () => {
  const consumer = await startTestService({ SERVICE_ROLE: 'consumer' });
  try {
    const http = client(consumer.baseUrl);
    expect((await http.get('/healthz')).body).toEqual({ status: 'ok' });
    expect(await http.get('/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
    const metrics = await http.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^# TYPE events_handled_total counter$/m);
    expect(metrics.body).toMatch(/^http_request_duration_seconds_bucket\{.*route="\/readyz".*\} \d+$/m);
    expect((await http.get('course-access-groups/')).status).toBe(404);
  } finally {
    await consumer.close();
  }
}, 60000);

test('GET /metrics shows a request-duration histogram line after one request', async () => {
  const http = client(service.baseUrl);
  await http.get('/healthz');
  const res = await http.get('/metrics');
  expect(res.status).toBe(200);
  expect(res.body).toMatch(/^http_request_duration_seconds_bucket\{.*route="\/healthz".*\} \d+$/m);
  expect(res.body).toMatch(/^process_resident_memory_bytes \d+/m);
});

test('an unknown route answers 404 {"detail": "Not found."}', async () => {
  const res = await client(service.baseUrl).get('/no/such/route');
  expect(res.status).toBe(404);
  expect(res.body).toEqual({ detail: 'Not found.' });
});

test('X-Request-Id is echoed back, or made when absent', async () => {
  const http = client(service.baseUrl);
  const echoed = await http.get('/healthz', { 'X-Request-Id': 'abc-123' });
  expect(echoed.headers.get('x-request-id')).toBe('abc-123');
  const made = await http.get('/healthz');
  expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
});

test('the OpenAPI document is served without a token', async () => {
  const res = await client(service.baseUrl).get('/course_access_groups/api/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(res.body.openapi).toBe('3.1.0');
});
