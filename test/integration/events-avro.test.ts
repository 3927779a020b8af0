// SPEC §5: the Open edX event bus's wire form (Avro in the Confluent frame, the envelope in ce_*
// headers) through the real schema registry (Apicurio, local stack), beside JSON on one topic;
// what an unknown schema id, bytes that do not decode and a registry outage do. The real
// producer's own messages: openedx-producer.test.ts.
import { randomUUID } from 'node:crypto';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { dlqTopic } from '../../consumers/consumer';
import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { activationAvroSchema, eventBusHeaders, registerActivationSchema } from '../helpers/avro';
import {
  closeProducer,
  cloudEvent,
  type EventTestService,
  newUserId,
  produce,
  produceOne,
  readTopic,
  seedRule,
  startEventService,
  structured,
  TYPES,
  userData,
  waitCommitted,
  waitFor,
} from '../helpers/events';
import { client } from '../helpers/http';
import { SCHEMA_REGISTRY_URL, uniqueName } from '../helpers/stack';
import { tcpProxy } from '../helpers/tcp-proxy';

let service: EventTestService;
let topic: string;
let registry: SchemaRegistry;
let schemaId: number;

beforeAll(async () => {
  service = await startEventService({ SCHEMA_REGISTRY_URL });
  topic = service.config.KAFKA_TOPICS[1]!;
  registry = new SchemaRegistry({ host: SCHEMA_REGISTRY_URL });
  schemaId = await registerActivationSchema(registry, topic);
}, 60000);
afterAll(async () => {
  await closeProducer();
  await service.close();
});

const tenant = (org: string) => new Tenant(service.db, org);
const membershipIn = (org: string, id: number) =>
  tenant(org)
    .collection<MembershipDoc>(COLLECTIONS.memberships)
    .findOne({ _id: String(id) });

/** An activation as the event bus sends it: Avro value (registry-encoded), Avro-free key here, ce_* headers. */
async function avroActivation(org: string, id: number, domain: string, time = '2026-05-01T10:00:00.000001+00:00') {
  const value = await registry.encode(schemaId, userData(org, { id, email: `a${id}@${domain}`, is_active: true }));
  return { key: `user${id}`, value, headers: eventBusHeaders(TYPES.activated, randomUUID(), time) };
}

test('an Avro activation is decoded through the registry and applied: the user and the rule membership', async () => {
  const org = uniqueName('org');
  const group = await seedRule(tenant(org), 'avro.example');
  const id = newUserId();
  await produce(topic, [await avroActivation(org, id, 'avro.example')]);
  expect(await waitFor(() => membershipIn(org, id))).toMatchObject({ user: id, group: group.id, automatic: true });
  expect(
    await tenant(org)
      .collection<UserDoc>(COLLECTIONS.users)
      .findOne({ _id: String(id) }),
  ).toMatchObject({
    id,
    is_active: true,
    username: `user${id}`,
    email: `a${id}@avro.example`,
    event_time: '2026-05-01T10:00:00.000001000Z',
  });
});

test('JSON and Avro messages on one topic are each decoded by their own form', async () => {
  const org = uniqueName('org');
  await seedRule(tenant(org), 'mixed.example');
  const [jsonId, avroId] = [newUserId(), newUserId()];
  await produce(topic, [
    structured(cloudEvent(TYPES.activated, userData(org, { id: jsonId, email: `j${jsonId}@mixed.example` })), jsonId),
    await avroActivation(org, avroId, 'mixed.example'),
  ]);
  await waitFor(async () => (await membershipIn(org, jsonId)) !== null && (await membershipIn(org, avroId)) !== null);
});

test('a schema id the registry does not know and bytes that do not decode go to the DLQ with the reason, key and value unchanged', async () => {
  const good = await avroActivation(uniqueName('org'), newUserId(), 'x.example');
  const unknown = Buffer.from(good.value);
  unknown.writeInt32BE(2_000_000_000, 1); // an id no registry here has handed out
  const truncated = good.value.subarray(0, good.value.length - 4);
  await produceOne(topic, { ...good, value: unknown, partition: 0 });
  const last = await produceOne(topic, { ...good, value: truncated, partition: 0 });
  await waitCommitted(service.config.KAFKA_GROUP_ID, last);

  const dead = await readTopic(dlqTopic(topic), 2);
  const byReason = new Map(dead.map((m) => [m.headers?.['x-dlq-reason']?.toString(), m]));
  const unknownDead = byReason.get('Avro schema id 2000000000 is not known to the schema registry');
  expect(unknownDead?.value).toEqual(unknown);
  expect(unknownDead?.key?.toString()).toBe(good.key);
  const truncatedDead = [...byReason.entries()].find(([reason]) => reason?.startsWith(`Avro value of schema id ${schemaId} does not decode`));
  expect(truncatedDead?.[1].value).toEqual(truncated);
});

/** A TCP proxy to the registry that the test can cut and restore: the registry "goes away" without touching the shared stack. */
async function registryProxy() {
  const target = new URL(SCHEMA_REGISTRY_URL);
  const proxy = tcpProxy({ host: target.hostname, port: Number(target.port) });
  await proxy.open();
  return { url: `http://127.0.0.1:${proxy.port}${target.pathname}`, cut: proxy.cut, restore: proxy.open, close: proxy.cut };
}

test('while the registry cannot be reached an Avro event is retried, never dead-lettered, and /readyz names it; applied once it is back', async () => {
  const proxy = await registryProxy();
  // A service of its own: its schema cache is empty, so it must ask the registry (through the proxy).
  const own = await startEventService({ SCHEMA_REGISTRY_URL: proxy.url }, { retry: { initialMs: 100, maxMs: 500 } });
  try {
    const ownTopic = own.config.KAFKA_TOPICS[0]!;
    const ownSchema = await registerActivationSchema(registry, ownTopic);
    const org = uniqueName('org');
    await seedRule(new Tenant(own.db, org), 'outage.example');
    const id = newUserId();
    await proxy.cut();
    const value = await registry.encode(ownSchema, userData(org, { id, email: `o${id}@outage.example`, is_active: true }));
    const eventId = randomUUID();
    await produce(ownTopic, [{ key: `user${id}`, value, headers: eventBusHeaders(TYPES.activated, eventId, '2026-05-02T00:00:00+00:00') }]);

    await waitFor(
      async () => own.logs.filter((l) => l.includes('schema registry unavailable')).length,
      (n) => n >= 3,
    );
    // Each retry is logged with the event it waits for.
    const retries = own.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'event handler failed; retrying');
    expect(retries.length).toBeGreaterThan(0);
    for (const r of retries) expect(r).toMatchObject({ event_id: eventId, event_type: TYPES.activated, retriable: true });
    const ready = await client(own.baseUrl).get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.failing).toContain('schema registry');
    expect(own.logs.some((l) => l.includes('dead-letter'))).toBe(false);

    await proxy.restore();
    const t = new Tenant(own.db, org);
    expect(await waitFor(() => t.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: String(id) }))).toMatchObject({ user: id });
    await waitFor(
      async () => (await client(own.baseUrl).get('/readyz')).status,
      (status) => status === 200,
    );
    expect(own.logs.some((l) => l.includes('dead-letter'))).toBe(false);
  } finally {
    await own.close();
    await proxy.close();
  }
}, 60000);

test('the registry takes one schema under many subjects at once, as Open edX producers starting together register it', async () => {
  // Each LMS producer registers its schema on its first event, one subject per topic; several start
  // together after a deploy. Apicurio 2.4 on H2 with a pool of connections answered 500 or 409
  // "already exists" to most such registrations (scripts/stack.sh gives it one connection). Plain
  // fetch: the registry's own answer, no client retry hiding it.
  const body = JSON.stringify({ schema: JSON.stringify(activationAvroSchema) });
  const register = async (subject: string) => {
    const res = await fetch(`${SCHEMA_REGISTRY_URL}/subjects/${encodeURIComponent(subject)}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body,
    });
    return { subject, status: res.status, body: await res.text() };
  };
  const prefix = uniqueName('many');
  const answers = [];
  for (let round = 0; round < 4; round++) {
    answers.push(...(await Promise.all(Array.from({ length: 6 }, (_, i) => register(`${prefix}-${round}-${i}-${activationAvroSchema.namespace}.CloudEvent`)))));
  }
  expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  for (const a of answers) expect(JSON.parse(a.body)).toEqual({ id: expect.any(Number) });
});
