// The relay's producer is idempotent: the broker keeps, per producer id, the sequence number of
// the last batch it appended, and refuses a batch that does not follow it
// (OUT_OF_ORDER_SEQUENCE_NUMBER, which kafkajs never retries). When a send's answer is lost (the
// broker appended the batch, then stopped or the link broke) and the send then fails for good
// (the broker stays away past kafkajs's retries), kafkajs takes back the sequence numbers it gave
// that batch (kafkajs/src/producer/sendMessages.js, the catch around `broker.produce`); the relay
// sends the step again, a different batch (more changes came meanwhile) from those same numbers,
// and the broker refuses it, and every later one, for good. A real broker, a real database; the
// fault is in the network between the relay and the broker (test/helpers/faulty-network.ts).
import { Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import { type Db, MongoClient } from 'mongodb';
import { type ChangeRelay, createChangeRelay } from '../../src/changes/relay';
import { COLLECTIONS, type GroupDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { updateGroup } from '../../src/domain/groups';
import { CLIENT_RETRY, CLIENT_TIMEOUTS } from '../../src/kafka';
import { createLogger } from '../../src/log';
import { createMetrics } from '../../src/metrics';
import { type ChangeReader, changeReader } from '../helpers/changes';
import { newGroup } from '../helpers/domain';
import { waitFor } from '../helpers/events';
import { faultyNetwork } from '../helpers/faulty-network';
import { KAFKA_BROKERS, MONGO_URL, uniqueName } from '../helpers/stack';

let mongo: MongoClient;
let db: Db;
const readers: ChangeReader[] = [];
const relays: ChangeRelay[] = [];
const databases: Db[] = [];

beforeAll(async () => {
  mongo = await MongoClient.connect(MONGO_URL);
  db = mongo.db(uniqueName('t'));
});

afterAll(async () => {
  for (const relay of relays) await relay.stop();
  for (const reader of readers) await reader.close();
  for (const d of [db, ...databases]) await d.dropDatabase();
  await mongo.close();
}, 60000);

/**
 * A relay on `db` whose client (`client`: its id, timeouts and retries) reaches the stack's broker
 * through a faulty network, publishing to a new one-partition topic that a reader follows.
 */
async function relayThroughFaultyNetwork(db: Db, client: Omit<KafkaConfig, 'brokers'>) {
  const topic = uniqueName('changes');
  const reader = await changeReader(topic, KAFKA_BROKERS, 1);
  readers.push(reader);
  const network = faultyNetwork();
  const kafka = new Kafka({ ...client, brokers: KAFKA_BROKERS.split(','), socketFactory: network.socketFactory, logLevel: logLevel.NOTHING });
  const metrics = createMetrics();
  const relay = createChangeRelay({
    db,
    kafka: () => kafka,
    topic,
    audit: true,
    log: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    metrics,
    batchEveryMs: 50,
    idleMs: 100,
    retry: { initialMs: 100, maxMs: 500 },
  });
  relays.push(relay);
  relay.start();
  return { reader, network, metrics };
}

test('a send whose answer was lost, then failed for good: the relay publishes every later change once the broker is back (it never sends from sequence numbers the broker already used)', async () => {
  // Few retries: a send fails for good within a second or two of the network going down.
  const { reader, network, metrics } = await relayThroughFaultyNetwork(db, {
    clientId: 'relay-lost-response',
    connectionTimeout: 1000,
    requestTimeout: 5000,
    retry: { initialRetryTime: 100, maxRetryTime: 300, retries: 2 },
  });

  const org = uniqueName('org');
  const tenant = new Tenant(db, org);
  const group = await newGroup(tenant, 'name-0');
  const other = await newGroup(tenant, 'other-0');
  const outboxEmpty = () =>
    waitFor(
      () => db.collection(COLLECTIONS.outbox).countDocuments({}),
      (n) => n === 0,
    );
  const names = (id: number) =>
    reader.received.filter((r) => r.event.subject === `course-access-groups/${id}`).map((r) => (r.event.data.group as GroupDoc).name);
  // Nothing left to send: the next send is name-1's.
  await waitFor(
    async () => [names(group), names(other)],
    ([g, o]) => g!.includes('name-0') && o!.includes('other-0'),
  );
  await outboxEmpty();
  // The answer to the next send is lost: the broker has the batch, the relay does not know it.
  network.loseNextProduceResponse();
  await updateGroup(tenant, group, { name: 'name-1' });
  await waitFor(
    async () => network.lostResponses(),
    (n) => n === 1,
  );
  await waitFor(
    async () => names(group),
    (seen) => seen.includes('name-1'),
  ); // appended indeed
  // The broker stays away past the send's retries (and the relay's next tries); meanwhile more
  // changes come, so the relay's next batch is not the one the broker has.
  await waitFor(
    async () => metrics.relayFailures.get().then((m) => m.values[0]?.value ?? 0),
    (n) => n >= 2,
  );
  await updateGroup(tenant, group, { name: 'name-2' });
  await updateGroup(tenant, other, { name: 'other-1' });
  network.up();

  // Everything after the lost answer is published, and the outbox empties.
  await waitFor(
    async () => [names(group).at(-1), names(other).at(-1)],
    ([g, o]) => g === 'name-2' && o === 'other-1',
    30000,
  );
  await outboxEmpty();
  // A newer change after all that is published too (the relay did not just get lucky once).
  await updateGroup(tenant, other, { name: 'other-2' });
  await waitFor(
    async () => names(other).at(-1),
    (name) => name === 'other-2',
    30000,
  );
}, 90000);

/** The request timeout of the test below's client (10 s in the service): a quiet connection times each try out. */
const REQUEST_TIMEOUT_MS = Number(process.env.RELAY_QUIET_REQUEST_TIMEOUT_MS || 2000);

test('the connections to the broker go quiet (no answer, no reset): the send fails after its few tries, and the relay publishes through new connections once they work, versions only growing', async () => {
  // A database of its own: the relay above still holds its database's lease.
  const db = mongo.db(uniqueName('t'));
  databases.push(db);
  // The service's timeouts and retries (src/kafka.ts) but a shorter request timeout: kafkajs's
  // default for an idempotent producer, retrying forever on the quiet connection, never fails.
  const { reader, network, metrics } = await relayThroughFaultyNetwork(db, {
    clientId: 'relay-quiet-connection',
    ...CLIENT_TIMEOUTS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    retry: { ...CLIENT_RETRY, retries: 10 },
  });
  const failures = () => metrics.relayFailures.get().then((m) => m.values[0]?.value ?? 0);

  const tenant = new Tenant(db, uniqueName('org'));
  const group = await newGroup(tenant, 'quiet-0');
  const events = () => reader.received.filter((r) => r.event.subject === `course-access-groups/${group}`);
  const names = () => events().map((r) => (r.event.data.group as GroupDoc).name);
  await waitFor(
    async () => names(),
    (seen) => seen.includes('quiet-0'),
  );

  const before = await failures();
  network.silence();
  await updateGroup(tenant, group, { name: 'quiet-1' });
  // The send fails after its tries (each a request timeout), the step with it.
  await waitFor(failures, (n) => n > before, REQUEST_TIMEOUT_MS * 15);
  expect(names()).not.toContain('quiet-1');
  network.up();
  await waitFor(
    async () => names(),
    (seen) => seen.at(-1) === 'quiet-1',
    30000,
  );
  // A later change follows it, and nothing older arrives after (the failed send was not left to
  // land late): each event's version is above the one before.
  await updateGroup(tenant, group, { name: 'quiet-2' });
  await waitFor(
    async () => names(),
    (seen) => seen.at(-1) === 'quiet-2',
    30000,
  );
  await waitFor(
    () => db.collection(COLLECTIONS.outbox).countDocuments({}),
    (n) => n === 0,
  );
  const versions = events().map((r) => r.event.data.version as number);
  expect(versions.every((v, i) => i === 0 || v > versions[i - 1]!)).toBe(true);
  expect(names().at(-1)).toBe('quiet-2');
}, 120000);
