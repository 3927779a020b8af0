// SPEC §6, readiness per role: /readyz of an API-only process (SERVICE_ROLE=api) reflects the
// database alone, so a broker or schema registry outage never takes the access API out of its
// load balancer (its change events wait in the outbox); a consuming process also needs the broker.
// Against a private Kafka node the test stops and starts (the shared one is never touched).
import { COLLECTIONS } from '../../src/db/collections';
import { waitFor } from '../helpers/events';
import { client } from '../helpers/http';
import { privateKafka } from '../helpers/private-stack';
import { startTestService, type TestService, uniqueName } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

// The private broker's ports (override when another run holds them).
const BROKER_PORT = Number(process.env.READINESS_TEST_PORT ?? 9392);
const CONTROLLER_PORT = BROKER_PORT + 1;
/** Nothing listens here: a registry that is down for the whole test. */
const NO_REGISTRY = 'http://127.0.0.1:1/apis/ccompat/v7';
const broker = privateKafka(BROKER_PORT, CONTROLLER_PORT);
const services: TestService[] = [];

afterAll(async () => {
  for (const s of services) await s.close().catch(() => undefined);
  await broker.remove();
}, 60000);

test('with the broker down, an API-only process stays ready and takes writes; a consumer turns not ready, naming the broker, and ready again once it is back', async () => {
  await broker.start();
  const shared = { KAFKA_BROKERS: broker.brokers, CHANGES_TOPIC: uniqueName('changes') };
  // The API-only process is given a registry that never answers: it does not need one.
  const api = await startTestService({ ...shared, SERVICE_ROLE: 'api', SCHEMA_REGISTRY_URL: NO_REGISTRY });
  services.push(api);
  const consumer = await startTestService({ ...shared, SERVICE_ROLE: 'consumer', MONGO_DB: api.config.MONGO_DB });
  services.push(consumer);
  expect((await client(api.baseUrl).get('/readyz')).body).toEqual({ status: 'ready' });
  expect((await client(consumer.baseUrl).get('/readyz')).body).toEqual({ status: 'ready' });

  await broker.stop();
  const down = await waitFor(
    () => client(consumer.baseUrl).get('/readyz'),
    (r) => r.status === 503,
    30000,
  );
  expect(down.body.failing).toContain('broker');

  // Probes over several seconds (past the moment the broker's cached answer expires), as a
  // kubelet's readiness probe would send them: each one 200.
  for (let i = 0; i < 5; i++) {
    const res = await client(api.baseUrl).get('/readyz');
    expect({ probe: i, status: res.status, body: res.body }).toEqual({ probe: i, status: 200, body: { status: 'ready' } });
    await new Promise((r) => setTimeout(r, 1000));
  }
  // And the API still writes; the change event waits in the outbox for the broker.
  const org = uniqueName('org');
  const created = await client(api.baseUrl, await siteAdminToken(org, 5)).post('course-access-groups/', { name: 'during the outage', description: '' });
  expect(created.status).toBe(201);
  expect(await api.db.collection(COLLECTIONS.outbox).countDocuments({})).toBeGreaterThan(0);
  expect((await client(consumer.baseUrl).get('/readyz')).status).toBe(503);

  await broker.start();
  const back = await waitFor(
    () => client(consumer.baseUrl).get('/readyz'),
    (r) => r.status === 200,
    60000,
  );
  expect(back.body).toEqual({ status: 'ready' });
}, 180000);
