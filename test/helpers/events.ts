import { randomUUID } from 'node:crypto';
import { type IHeaders, Kafka, type KafkaMessage, logLevel, type Producer } from 'kafkajs';
import { MongoClient } from 'mongodb';
import type { BatchHandler } from '../../consumers/batch';
import type { MessageHandler, RetryPolicy } from '../../consumers/consumer';
import { COLLECTIONS, type GroupDoc, type MembershipDoc, type RuleDoc, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { createLogger } from '../../src/log';
import { startService } from '../../src/runtime';
import { client } from './http';
import { KAFKA_BROKERS, type TestService, testConfig, uniqueName } from './stack';
import { siteAdminToken } from './tokens';

/** Event builders, a producer, seeding through Tenant and a service whose logs a test can read. */

export const TYPES = {
  activated: 'org.openedx.learning.user.account.activated.v1',
  registered: 'org.openedx.learning.student.registration.completed.v1',
  login: 'org.openedx.learning.auth.session.login.completed.v1',
  updated: 'org.openedx.learning.user.updated.v1',
  retired: 'org.openedx.learning.user.retired.v1',
  catalogChanged: 'org.openedx.content_authoring.course.catalog_info.changed.v1',
  courseDeleted: 'org.openedx.content_authoring.course.deleted.v1',
} as const;

export interface CloudEventJson {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  time?: string;
  datacontenttype?: string;
  data: unknown;
}

let clock = Date.parse('2026-01-01T00:00:00Z');
/** A fresh, increasing event time (tests that need an order pass their own). */
export const nextTime = () => {
  clock += 1000;
  return new Date(clock).toISOString();
};

export function cloudEvent(type: string, data: unknown, opts: { time?: string; id?: string } = {}): CloudEventJson {
  return {
    specversion: '1.0',
    id: opts.id ?? randomUUID(),
    source: 'openedx/lms/web',
    type,
    time: opts.time ?? nextTime(),
    datacontenttype: 'application/json',
    data,
  };
}

export interface TestUser {
  id: number;
  email: string;
  username?: string;
  name?: string;
  is_active?: boolean;
  is_staff?: boolean;
  is_site_admin?: boolean;
}

let nextUser = 1000 + Math.floor(Math.random() * 1_000_000) * 100;
/** A user id no other test of this run uses (user ids are global across organizations). */
export const newUserId = () => ++nextUser;

export function userData(org: string, user: TestUser) {
  return {
    user: {
      id: user.id,
      is_active: user.is_active ?? false,
      pii: { username: user.username ?? `user${user.id}`, email: user.email, name: user.name ?? `User ${user.id}` },
      ...(user.is_staff === undefined ? {} : { is_staff: user.is_staff }),
      ...(user.is_site_admin === undefined ? {} : { is_site_admin: user.is_site_admin }),
    },
    organization: org,
  };
}

/** A structured-mode message: the whole envelope in the value, keyed by `key`. */
export const structured = (event: CloudEventJson, key: string | number) => ({
  key: String(key),
  value: JSON.stringify(event),
  headers: { 'content-type': 'application/cloudevents+json' },
});

/** A binary-mode message: attributes in `ce_*` headers, `data` as the value. */
export function binary(event: CloudEventJson, key: string | number) {
  const headers: IHeaders = {
    ce_specversion: event.specversion,
    ce_id: event.id,
    ce_source: event.source,
    ce_type: event.type,
    'content-type': 'application/json',
  };
  if (event.time) headers.ce_time = event.time;
  return { key: String(key), value: JSON.stringify(event.data), headers };
}

export const kafka = new Kafka({ clientId: 'events-test', brokers: KAFKA_BROKERS.split(','), logLevel: logLevel.NOTHING });
let producer: Producer | null = null;

async function connectedProducer(): Promise<Producer> {
  if (!producer) {
    producer = kafka.producer({ allowAutoTopicCreation: true });
    await producer.connect();
  }
  return producer;
}

/**
 * Config of a test topic whose records carry Kafka timestamps of simulated instants months back
 * (events without `time`): kept whatever their age. Under the broker's 7-day retention, checked
 * every 5 minutes, a partition holding only such records is deleted whole, and a consumer not yet
 * past them (one killed, one catching up) finds them gone.
 */
export const KEEP_OLD_RECORDS = [{ name: 'retention.ms', value: '-1' }];

export async function produce(topic: string, messages: { key: string; value: string | Buffer | null; headers?: IHeaders }[]): Promise<void> {
  await (await connectedProducer()).send({ topic, acks: -1, messages });
}

export async function closeProducer(): Promise<void> {
  await producer?.disconnect();
  producer = null;
}

/** Polls `probe` until it returns something truthy (or `until` accepts it), failing after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T>, until: (v: T) => boolean = Boolean, timeoutMs = 30000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (until(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * How long a test reader's fetch waits at the broker for messages. Its disconnect waits for the
 * fetch under way: at kafkajs's default (5 s) each read of a topic ended with 5 s of nothing.
 */
export const READER_FETCH_WAIT_MS = 200;

/** Reads every message of `topic` from the beginning until `count` arrived. */
export async function readTopic(topic: string, count: number, timeoutMs = 30000): Promise<KafkaMessage[]> {
  const consumer = kafka.consumer({ groupId: `reader-${randomUUID()}`, maxWaitTimeInMs: READER_FETCH_WAIT_MS });
  const seen: KafkaMessage[] = [];
  await consumer.connect();
  // A dead-letter topic may be created by the service at this very moment.
  await untilBrokerKnows(() => consumer.subscribe({ topic, fromBeginning: true }));
  await consumer.run({ eachMessage: async ({ message }) => void seen.push(message) });
  try {
    await waitFor(
      async () => seen.length,
      (n) => n >= count,
      timeoutMs,
    );
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

/**
 * `count` activation events of new users of `org` whose emails match `domain`, produced in
 * chunks (acks from all replicas). Returns the user ids. `send` defaults to the shared stack.
 */
export async function produceActivations(
  topic: string,
  org: string,
  domain: string,
  count: number,
  send: (topic: string, messages: ReturnType<typeof structured>[]) => Promise<unknown> = produce,
): Promise<number[]> {
  const ids = Array.from({ length: count }, () => newUserId());
  for (let i = 0; i < ids.length; i += 500) {
    await send(
      topic,
      ids.slice(i, i + 500).map((id) => structured(cloudEvent(TYPES.activated, userData(org, { id, email: `u${id}@${domain}` })), id)),
    );
  }
  return ids;
}

/** A group and a rule `domain -> group`, written through the organization's Tenant. */
export async function seedRule(tenant: Tenant, domain: string, groupName = `group for ${domain}`): Promise<GroupDoc> {
  const id = await tenant.nextId('groups');
  const group = await tenant.collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: String(id), id, name: groupName.slice(0, 32), description: '' });
  const ruleNumber = await tenant.nextId('membership_rules');
  await tenant.collection<RuleDoc>(COLLECTIONS.rules).insertOne({ _id: `${tenant.org}|${domain}`, id: ruleNumber, name: `rule ${domain}`, domain, group: id });
  return group;
}

export interface EventTestService extends TestService {
  /** Every line the service logged, as text. */
  logs: string[];
  /** Stops the service and leaves its database (for a restart with the same config). */
  stop(): Promise<void>;
}

/**
 * The real service (HTTP and consumer) against the local stack, logging at debug level into
 * `logs`. `env` may reuse a previous instance's database, topics and group to restart it;
 * `handle` replaces the event handler (a test's own failures).
 */
export async function startEventService(
  env: Record<string, string | undefined> = {},
  opts: { retry?: RetryPolicy; logs?: string[]; waitReady?: boolean; handle?: MessageHandler; handleBatch?: BatchHandler } = {},
): Promise<EventTestService> {
  const config = testConfig({ SERVICE_ROLE: 'all', LOG_LEVEL: 'debug', ...env });
  const logs = opts.logs ?? [];
  const log = createLogger(config.LOG_LEVEL, { write: (line: string) => void logs.push(line) });
  const running = await startService(config, log, { retry: opts.retry, handle: opts.handle, handleBatch: opts.handleBatch });
  if (opts.waitReady !== false) await running.ready;
  return {
    ...running,
    config,
    logs,
    baseUrl: `http://127.0.0.1:${running.port}`,
    async close() {
      await running.stop();
      const client = new MongoClient(config.MONGO_URL, { serverSelectionTimeoutMS: 2000 });
      try {
        await client.db(config.MONGO_DB).dropDatabase();
      } catch {
        // unreachable in fault tests: nothing to clean then
      } finally {
        await client.close();
      }
    },
  };
}

/** The env that makes a second service instance use the same database, topics and group. */
export const sameDeployment = (s: TestService) => ({
  MONGO_URL: s.config.MONGO_URL,
  MONGO_DB: s.config.MONGO_DB,
  KAFKA_TOPICS: s.config.KAFKA_TOPICS.join(','),
  KAFKA_GROUP_ID: s.config.KAFKA_GROUP_ID,
});

/**
 * On a loaded machine the broker's metadata lags behind a fresh topic ("This server does not
 * host this topic-partition") and a group's coordinator moves ("This is not the correct
 * coordinator for this group"). kafkajs calls both retriable, and so do these helpers, for a
 * few seconds, so a test judges the service, not the broker's bookkeeping.
 */
export async function untilBrokerKnows<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const retriable = (err as { retriable?: boolean }).retriable === true || (err as Error).name === 'KafkaJSNumberOfRetriesExceeded';
      if (!retriable || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
/** Produces one message and says where it landed. */
export async function produceOne(topic: string, message: { key: string; value: string | Buffer | null; headers?: IHeaders; partition?: number }) {
  const [meta] = await (await connectedProducer()).send({ topic, acks: -1, messages: [message] });
  return { topic, partition: meta!.partition, offset: Number(meta!.baseOffset) };
}

/**
 * Waits until the consumer group committed past `offset` of `partition`: the message and every
 * earlier one of its partition were handled. The barrier for "the event was processed" when the
 * effect to check is that nothing changed.
 */
export async function waitCommitted(groupId: string, at: { topic: string; partition: number; offset: number }, timeoutMs = 30000): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await waitFor(
      async () => {
        const [topic] = await untilBrokerKnows(() => admin.fetchOffsets({ groupId, topics: [at.topic] }));
        const p = topic?.partitions.find((x) => x.partition === at.partition);
        return p ? Number(p.offset) : -1;
      },
      (committed) => committed > at.offset,
      timeoutMs,
    );
  } finally {
    await admin.disconnect();
  }
}

/** Waits until the consumer group committed every message `topic` holds now (all partitions). */
export async function waitCaughtUp(groupId: string, topic: string, timeoutMs = 30000, on: Kafka = kafka): Promise<void> {
  const admin = on.admin();
  await admin.connect();
  try {
    const ends = new Map((await untilBrokerKnows(() => admin.fetchTopicOffsets(topic))).map((p) => [p.partition, Number(p.high)]));
    await waitFor(
      async () => {
        const [committed] = await untilBrokerKnows(() => admin.fetchOffsets({ groupId, topics: [topic] }));
        return (committed?.partitions ?? []).every((p) => Number(p.offset) >= (ends.get(p.partition) ?? 0) || (ends.get(p.partition) ?? 0) === 0);
      },
      Boolean,
      timeoutMs,
    );
  } finally {
    await admin.disconnect();
  }
}

/**
 * Every activation of `ids` landed exactly once in effect: one active user each, and one
 * automatic membership each in the rule's group, with distinct ids (none lost, none applied twice).
 */
export async function expectEachActivationAppliedOnce(tenant: Tenant, ids: readonly number[], groupId: number): Promise<void> {
  const all = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).find({}).toArray();
  expect(all).toHaveLength(ids.length);
  expect(new Set(all.map((m) => m.id)).size).toBe(ids.length);
  expect(new Set(all.map((m) => m.user))).toEqual(new Set(ids));
  expect(all.every((m) => m.group === groupId && m.automatic)).toBe(true);
  const users = await tenant.collection<UserDoc>(COLLECTIONS.users).find({}).toArray();
  expect(new Set(users.map((u) => u.id))).toEqual(new Set(ids));
  expect(users.every((u) => u.is_active)).toBe(true);
}

/** One sample of the service's `/metrics`: `name` with exactly `labels`; NaN when there is none. */
export async function metricValue(baseUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = (await client(baseUrl).get<string>('/metrics')).body;
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    if ((m[2] ?? '').split(',').filter(Boolean).sort().join(',') === wanted) return Number(m[3]);
  }
  return Number.NaN;
}

/** A new organization with a group and a rule `domain -> group`, made through `service`'s admin API. */
export async function orgWithRule(service: TestService, domain: string) {
  const org = uniqueName('tenant');
  const api = client(service.baseUrl, await siteAdminToken(org));
  const group = (await api.post('course-access-groups/', { name: 'learners', description: '' })).body as { id: number };
  if ((await api.post('membership-rules/', { name: domain, domain, group: group.id })).status !== 201) throw new Error(`rule ${domain} refused`);
  return { org, api, group };
}

/** Whether the stored learner is active (the API does not show it). */
export const storedActive = async (service: TestService, org: string, id: number) =>
  (await new Tenant(service.db, org).collection<UserDoc>(COLLECTIONS.users).findById(String(id)))?.is_active;

/** How many messages `<topic>.dlq` holds (none when the topic was never created). */
export async function dlqCount(topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(`${topic}.dlq`)) return 0;
    return (await admin.fetchTopicOffsets(`${topic}.dlq`)).reduce((n, p) => n + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}
