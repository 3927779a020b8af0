// docs/operations.md operations endpoints and issue #2's HTTP checks.
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
