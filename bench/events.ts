import { randomUUID } from 'node:crypto';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { SignJWT } from 'jose';
import { type IHeaders, Kafka, type KafkaMessage, logLevel } from 'kafkajs';
import { type Db, MongoClient } from 'mongodb';
import { createBatchHandler } from '../consumers/batch';
import { loadConfig } from '../src/config';
import { COLLECTIONS, ensureIndexes, type GroupDoc, type RuleDoc } from '../src/db/collections';
import { Tenant } from '../src/db/tenant';
import { applyCatalogInfo } from '../src/domain/course-event-data';
import { createGroup } from '../src/domain/groups';
import { createRule } from '../src/domain/membership-rules';
import { API_PREFIX as API } from '../src/http/openapi';
import { createLogger } from '../src/log';
import { createMetrics } from '../src/metrics';
import { startService } from '../src/runtime';
import { eventBusHeaders, registerActivationSchema } from '../test/helpers/avro';
import { type BenchRow, formatTable } from './table';

/**
 * Event throughput: `events` activation events (a fifth of them matching a membership rule) drained from
 * a pre-filled topic of PARTITIONS partitions by the real service consumer, until every
 * membership exists; beside it, in the same run and over the same messages, the ceiling: raw
 * kafkajs consumption with one upsert per message into a scratch collection, with the same
 * partition concurrency. The service does several database operations per activation (user
 * upsert, tombstone check, rule lookup, membership check, id claim, membership insert, and a
 * change-log entry per write). Both clocks start once the consumer runs and stop at the last message.
 *
 * Then the same activations as the Open edX event bus sends them (Avro in the Confluent frame,
 * encoded through the schema registry at `schemaRegistryUrl`, the envelope in ce_* headers), on a
 * topic and database of their own, drained by a second service consumer: its ratio is to the JSON
 * row of the same run (target ≥ 0.9: the schema is fetched once and cached, then each message is
 * a local Avro decode).
 */
const PARTITIONS = 3;
const ACTIVATED = 'org.openedx.learning.user.account.activated.v1';
/** Every fifth learner's email matches the organization's rule: 20% of an onboarding burst. */
const matches = (id: number) => id % 5 === 0;
const matching = (events: number) => Math.floor(events / 5);

/** An activation's `data` for learner `id` of `org` (ids from 1). */
export const activationData = (id: number, org: string) => ({
  user: { id, is_active: true, pii: { username: `u${id}`, email: `u${id}@${matches(id) ? 'bench.example' : 'other.example'}`, name: `User ${id}` } },
  organization: org,
});

const say = (message: string) => process.stderr.write(`[bench events] ${message}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A quantile from cumulative histogram buckets (upper bounds in ms), interpolated within its bucket. */
function bucketQuantile(buckets: { le: number; count: number }[], total: number, q: number): number | null {
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const { le, count } of buckets) {
    if (count >= rank) return lower + ((rank - below) / Math.max(1, count - below)) * (le - lower);
    lower = le;
    below = count;
  }
  return null; // beyond the last finite bucket
}

/** A bench waits for its end state, but not forever: a stalled consumer fails the row loudly. */
const STALL_LIMIT_MS = Number(process.env.BENCH_EVENTS_TIMEOUT_MS || 30 * 60_000);

async function until(done: () => boolean | Promise<boolean>, what: string, progress: () => string): Promise<void> {
  const deadline = Date.now() + STALL_LIMIT_MS;
  let told = Date.now();
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what} did not finish within ${STALL_LIMIT_MS / 1000} s (${progress()})`);
    // A long row says where it is every 30 s: a rate that falls shows while it falls.
    if (Date.now() - told > 30_000) {
      told = Date.now();
      say(`${what}: ${progress()}`);
    }
    await sleep(20);
  }
}

/** The services' log level (`BENCH_LOG_LEVEL`, default silent): `warn` shows a batch that failed and went per message. */
const SERVICE_LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'silent';

/** What the events rows measure beyond their rates, for the targets. */
export interface EventFigures {
  /** Seconds the service's consumer took to apply all of `events` (the burst on 3 partitions). */
  burstSeconds: number;
  /** Seconds after the last message of the 10,000-burst was produced until the consumer had applied them all. */
  lagSeconds: number;
  /** p99 of the access decisions answered during that burst, ms. */
  decisionP99: number | null;
  /** The batch path's database commands per event. */
  commandsPerEvent: number;
}

export async function benchEvents(opts: {
  events: number;
  /** Activations of the burst answered beside 50 decisions a second (10,000). */
  burst?: number;
  mongoUrl: string;
  kafkaBrokers: string;
  schemaRegistryUrl: string;
}): Promise<{ rows: BenchRow[]; figures: EventFigures }> {
  const run = `${Date.now().toString(36)}${randomUUID().slice(0, 4)}`;
  const topic = `bench-events-${run}`;
  const avroTopic = `bench-events-avro-${run}`;
  const org = `bench-org-${run}`;
  const serviceDb = `bench_events_${run}`;
  const avroDb = `bench_events_avro_${run}`;
  const scratchDb = `bench_ceiling_${run}`;
  const kafka = new Kafka({ clientId: 'bench-events', brokers: opts.kafkaBrokers.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const mongo = new MongoClient(opts.mongoUrl, { serverSelectionTimeoutMS: 5000 });
  await Promise.all([admin.connect(), mongo.connect()]);
  try {
    await admin.createTopics({
      topics: [
        { topic, numPartitions: PARTITIONS },
        { topic: avroTopic, numPartitions: PARTITIONS },
      ],
      waitForLeaders: true,
    });

    /** The organization's rule, written through its Tenant as the admin API would. */
    const seedRule = async (db: Db) => {
      const tenant = new Tenant(db, org);
      const groupId = await tenant.nextId('groups');
      await tenant.collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: String(groupId), id: groupId, name: 'Bench', description: '' });
      await tenant
        .collection<RuleDoc>(COLLECTIONS.rules)
        .insertOne({ _id: `${org}|bench.example`, id: await tenant.nextId('membership_rules'), name: 'bench', domain: 'bench.example', group: groupId });
      return tenant;
    };
    const tenant = await seedRule(mongo.db(serviceDb));
    const avroTenant = await seedRule(mongo.db(avroDb));

    say(`producing ${opts.events} activation events to ${topic}, and the same as Avro to ${avroTopic}`);
    const registry = new SchemaRegistry({ host: opts.schemaRegistryUrl });
    const schemaId = await registerActivationSchema(registry, avroTopic);
    const producer = kafka.producer();
    await producer.connect();
    const time = Date.parse('2026-01-01T00:00:00Z');
    for (let start = 0; start < opts.events; start += 500) {
      const messages = [];
      const avroMessages: { key: string; value: Buffer; headers: IHeaders }[] = [];
      for (let i = start; i < Math.min(opts.events, start + 500); i++) {
        const id = i + 1;
        const at = new Date(time + i).toISOString();
        const data = activationData(id, org);
        const event = { specversion: '1.0', id: randomUUID(), source: 'bench', type: ACTIVATED, time: at, data };
        messages.push({ key: String(id), value: JSON.stringify(event) });
        avroMessages.push({ key: `u${id}`, value: await registry.encode(schemaId, data), headers: eventBusHeaders(ACTIVATED, randomUUID(), at) });
      }
      await producer.send({ topic, acks: -1, messages });
      await producer.send({ topic: avroTopic, acks: -1, messages: avroMessages });
    }
    await producer.disconnect();

    // Ceiling: the same messages, kafkajs eachMessage, one upsert each.
    say('ceiling: raw kafkajs + one upsert per message');
    const scratch = mongo.db(scratchDb).collection<{ _id: string; value: string }>('scratch');
    const upsert = (key: string, value: string) => scratch.updateOne({ _id: key }, { $set: { value } }, { upsert: true });
    const latencies: number[] = [];
    // The service consumer's fetch wait (consumers/consumer.ts): at kafkajs's default (5 s) the
    // disconnect below waited up to 5 s for the fetch under way.
    const consumer = kafka.consumer({ groupId: `bench-ceiling-${run}`, maxWaitTimeInMs: 1000 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let seen = 0;
    let lastAt = 0;
    await consumer.run({
      partitionsConsumedConcurrently: PARTITIONS,
      eachMessage: async ({ message }) => {
        const started = performance.now();
        await upsert(message.key!.toString(), message.value!.toString());
        lastAt = performance.now();
        latencies.push(lastAt - started);
        seen++;
      },
    });
    const ceilingStart = performance.now();
    await until(
      () => seen >= opts.events,
      'the ceiling consumer',
      () => `${seen} of ${opts.events}`,
    );
    const ceilingSeconds = (lastAt - ceilingStart) / 1000;
    await consumer.disconnect();
    latencies.sort((a, b) => a - b);
    const ceiling: BenchRow = {
      row: 'events: kafkajs + one upsert per message (ceiling)',
      rate: opts.events / ceilingSeconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      ceilingRate: null,
      note: `${opts.events} messages, ${PARTITIONS} partitions; latency = one upsert`,
    };

    /** The service: its real consumer, handlers and storage, until every event of `from` was applied. */
    const serviceRow = async (row: string, from: string, db: string, rowTenant: Tenant, ceilingRate: number, env: Record<string, string> = {}) => {
      const config = loadConfig({
        MONGO_URL: opts.mongoUrl,
        MONGO_DB: db,
        KAFKA_BROKERS: opts.kafkaBrokers,
        KAFKA_TOPICS: from,
        KAFKA_GROUP_ID: `bench-service-${from}`,
        SERVICE_ROLE: 'consumer',
        PORT: '0', // its probes' port: any free one
        // Memberships made by rules are published, as deployed, to a topic of this run.
        CHANGES_TOPIC: `bench-changes-${run}`,
        LOG_LEVEL: SERVICE_LOG_LEVEL,
        JWT_SECRET: 'bench-secret-not-used-0123456789',
        ...env,
      });
      const service = await startService(config, createLogger(SERVICE_LOG_LEVEL));
      await service.ready;
      const serviceStart = performance.now();
      const handled = async (outcome?: string) => {
        const metric = await service.metrics.eventsHandled.get();
        return metric.values
          .filter((v) => v.labels.type === ACTIVATED && v.labels.outcome !== 'retried' && (outcome === undefined || v.labels.outcome === outcome))
          .reduce((sum, v) => sum + v.value, 0);
      };
      // Done when every event's learner is there: a message handled again (a redelivery after a
      // rebalance) counts twice in the metric, so the metric alone says when to start looking.
      const users = rowTenant.collection(COLLECTIONS.users);
      let applied = 0;
      let stored = 0;
      let lookedAt = 0;
      await until(
        async () => {
          applied = await handled();
          if (applied < opts.events || Date.now() - lookedAt < 1000) return false;
          lookedAt = Date.now();
          stored = await users.countDocuments();
          return stored >= opts.events;
        },
        'the service consumer',
        () => `${applied} handled (${stored} learners stored) of ${opts.events}, ${(applied / ((performance.now() - serviceStart) / 1000)).toFixed(0)}/s`,
      );
      const handledAgain = await handled('duplicate');
      const serviceSeconds = (performance.now() - serviceStart) / 1000;
      const histogram = (await service.metrics.eventDuration.get()).values.filter((v) => v.labels.type === ACTIVATED);
      const durations = histogram.find((v) => v.metricName === 'event_handler_duration_seconds_sum');
      const buckets = histogram
        .map((v) => ({ name: v.metricName, le: (v.labels as Record<string, string | number>).le, count: v.value }))
        .filter((v) => v.name === 'event_handler_duration_seconds_bucket' && v.le !== '+Inf')
        .map((v) => ({ le: Number(v.le) * 1000, count: v.count }));
      await service.stop();
      const memberships = await rowTenant.collection(COLLECTIONS.memberships).countDocuments();
      if (memberships !== matching(opts.events)) say(`WARNING: ${memberships} memberships for ${matching(opts.events)} matching events (${row})`);
      return {
        row,
        rate: opts.events / serviceSeconds,
        p50: bucketQuantile(buckets, opts.events, 0.5),
        p99: bucketQuantile(buckets, opts.events, 0.99),
        ceilingRate,
        note: `all ${opts.events} applied in ${serviceSeconds.toFixed(0)} s (${handledAgain} handled again as duplicates); ${memberships}/${matching(opts.events)} memberships; latency = handler duration (histogram buckets, a batch's time shared by its events), mean ${durations ? ((durations.value / opts.events) * 1000).toFixed(1) : '?'} ms`,
      } satisfies BenchRow;
    };
    say('service consumer: activation -> user + membership');
    const events = await serviceRow('events: activation -> user + membership (service consumer)', topic, serviceDb, tenant, ceiling.rate);
    say('service consumer: the same activations in Avro through the schema registry');
    const avro = await serviceRow('events: the same in Avro through the schema registry (service consumer)', avroTopic, avroDb, avroTenant, events.rate, {
      SCHEMA_REGISTRY_URL: opts.schemaRegistryUrl,
    });
    avro.note = `ratio to the JSON row above (target ≥ 0.9); ${avro.note}`;
    say('the batch path alone, its database commands counted');
    const commands = await commandsPerEvent(opts.mongoUrl, `bench_events_commands_${run}`, Math.min(opts.events, 20_000), ceiling.rate);
    const burstSize = opts.burst ?? 10_000;
    say(`a burst of ${burstSize} while 50 access decisions a second are answered`);
    const burst = await burstUnderDecisions(opts, run, kafka, burstSize, ceiling.rate);
    return {
      rows: [ceiling, events, avro, commands.row, burst.row],
      figures: { burstSeconds: opts.events / events.rate, lagSeconds: burst.lagSeconds, decisionP99: burst.row.p99, commandsPerEvent: commands.perEvent },
    };
  } finally {
    await Promise.allSettled([
      mongo.db(serviceDb).dropDatabase(),
      mongo.db(avroDb).dropDatabase(),
      mongo.db(scratchDb).dropDatabase(),
      admin.deleteTopics({ topics: [topic, avroTopic] }),
    ]);
    await Promise.allSettled([mongo.close(), admin.disconnect()]);
  }
}

/** A structured CloudEvent of an activation, as the Kafka message the consumer reads. */
export function activationMessage(id: number, org: string, offset: number, time: number): KafkaMessage {
  const event = { specversion: '1.0', id: `bench-${id}`, source: 'bench', type: ACTIVATED, time: new Date(time).toISOString(), data: activationData(id, org) };
  return {
    key: Buffer.from(String(id)),
    value: Buffer.from(JSON.stringify(event)),
    headers: {},
    offset: String(offset),
    timestamp: String(time),
    attributes: 0,
  };
}

/**
 * `events` activations of new learners given to the consumer's batch path (consumers/batch.ts)
 * in runs of `runSize`, as one partition's fetches would, with every database command counted
 * (the driver's command monitoring): commands per event, and which kinds take the time.
 */
export async function profileBatchPath(
  mongoUrl: string,
  dbName: string,
  events: number,
  runSize = 500,
): Promise<{ seconds: number; commands: number; byKind: Map<string, { n: number; ms: number }> }> {
  const client = await new MongoClient(mongoUrl, { monitorCommands: true }).connect();
  const db = client.db(dbName);
  try {
    await ensureIndexes(db);
    const org = 'bench-profile';
    const tenant = new Tenant(db, org);
    const group = await createGroup(tenant, { name: 'profiled', description: '' });
    await createRule(tenant, { name: 'profiled', domain: 'bench.example', group: group.id });
    const handleBatch = createBatchHandler({ db, log: createLogger('silent'), metrics: createMetrics() });
    const started = new Map<number, { at: number; kind: string }>();
    const byKind = new Map<string, { n: number; ms: number }>();
    let commands = 0;
    client.on('commandStarted', (e) => {
      const c = e.command as Record<string, unknown>;
      started.set(e.requestId, { at: performance.now(), kind: `${e.commandName} ${String(c[e.commandName])}` });
    });
    client.on('commandSucceeded', (e) => {
      const s = started.get(e.requestId);
      if (!s) return;
      commands++;
      const k = byKind.get(s.kind) ?? { n: 0, ms: 0 };
      k.n++;
      k.ms += performance.now() - s.at;
      byKind.set(s.kind, k);
    });
    const base = Date.parse('2026-01-01T00:00:00Z');
    const t0 = performance.now();
    for (let first = 1; first <= events; first += runSize) {
      const ids = Array.from({ length: Math.min(runSize, events - first + 1) }, (_, i) => first + i);
      await handleBatch({ topic: 'profile', partition: 0, messages: ids.map((id) => activationMessage(id, org, id - 1, base + id)) });
    }
    return { seconds: (performance.now() - t0) / 1000, commands, byKind };
  } finally {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  }
}

/** The batch path's database commands per event (target < 2), from profileBatchPath; its rate against the events ceiling. */
async function commandsPerEvent(mongoUrl: string, dbName: string, events: number, ceilingRate: number): Promise<{ row: BenchRow; perEvent: number }> {
  const { seconds, commands, byKind } = await profileBatchPath(mongoUrl, dbName, events);
  const top = [...byKind].sort((a, b) => b[1].ms - a[1].ms)[0];
  const perEvent = commands / events;
  return {
    perEvent,
    row: {
      row: 'events: the batch path alone, runs of 500 (database commands counted)',
      rate: events / seconds,
      p50: null,
      p99: null,
      ceilingRate,
      note: `${events} activations, one run after another; ${perEvent.toFixed(3)} database commands per event (target < 2); most time: ${top ? `${top[0]} (${((top[1].ms / 1000 / seconds) * 100).toFixed(0)}%)` : '–'}`,
    },
  };
}

/**
 * A burst of `BURST` activations produced to a fresh topic of PARTITIONS partitions while the
 * service (API and consumer in one process, as SERVICE_ROLE=all) answers 50 access decisions a
 * second: how long after the last message was produced the consumer has applied them all (its
 * lag back to zero), and the decisions' latency during the burst.
 */
async function burstUnderDecisions(
  opts: { mongoUrl: string; kafkaBrokers: string },
  run: string,
  kafka: Kafka,
  BURST: number,
  ceilingRate: number,
): Promise<{ row: BenchRow; lagSeconds: number }> {
  const topic = `bench-burst-${run}`;
  const org = `bench-burst-org-${run}`;
  const dbName = `bench_burst_${run}`;
  const secret = randomUUID();
  const admin = kafka.admin();
  await admin.connect();
  const mongo = await new MongoClient(opts.mongoUrl).connect();
  let service: Awaited<ReturnType<typeof startService>> | null = null;
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true });
    const tenant = new Tenant(mongo.db(dbName), org);
    const group = await createGroup(tenant, { name: 'Bench', description: '' });
    await createRule(tenant, { name: 'bench', domain: 'bench.example', group: group.id });
    const courses = Array.from({ length: 10 }, (_, i) => `course-v1:BENCH+C${i}+R`);
    for (const course_key of courses) {
      await applyCatalogInfo(mongo.db(dbName), { catalog_info: { course_key, name: course_key }, organization: org }, '2026-01-01T00:00:00.000000000Z', org);
    }
    const config = loadConfig({
      MONGO_URL: opts.mongoUrl,
      MONGO_DB: dbName,
      KAFKA_BROKERS: opts.kafkaBrokers,
      KAFKA_TOPICS: topic,
      KAFKA_GROUP_ID: `bench-burst-${run}`,
      SERVICE_ROLE: 'all',
      PORT: '0',
      CHANGES_TOPIC: `bench-changes-${run}`,
      LOG_LEVEL: 'silent',
      JWT_SECRET: secret,
    });
    service = await startService(config, createLogger('silent'));
    await service.ready;
    const token = await new SignJWT({ user_id: 900_000_001, roles: ['service'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(secret));
    const base = `http://127.0.0.1:${service.port}${API}/access/`;
    // 50 decisions a second about learners of the burst (arriving or not yet), each timed.
    const latencies: { at: number; ms: number; ok: boolean }[] = [];
    let deciding = true;
    const decisions = (async () => {
      const inFlight: Promise<void>[] = [];
      for (let n = 0; deciding; n++) {
        const user = 1 + Math.floor(Math.random() * BURST);
        const started = performance.now();
        inFlight.push(
          fetch(`${base}?course_id=${encodeURIComponent(courses[n % courses.length]!)}&action=course.enroll&user_id=${user}`, {
            headers: { authorization: `Bearer ${token}` },
          }).then(
            async (r) => {
              const body = await r.text();
              if (!r.ok && latencies.every((l) => l.ok)) say(`decision answered ${r.status}: ${body.slice(0, 200)}`);
              latencies.push({ at: started, ms: performance.now() - started, ok: r.ok });
            },
            () => void latencies.push({ at: started, ms: performance.now() - started, ok: false }),
          ),
        );
        await sleep(20);
      }
      await Promise.all(inFlight);
    })();
    await sleep(2000); // decisions before the burst: the service is warm
    const producer = kafka.producer();
    await producer.connect();
    const burstStart = performance.now();
    const time = Date.parse('2026-02-01T00:00:00Z');
    for (let first = 1; first <= BURST; first += 500) {
      const ids = Array.from({ length: Math.min(500, BURST - first + 1) }, (_, i) => first + i);
      await producer.send({
        topic,
        acks: -1,
        messages: ids.map((id) => ({
          key: String(id),
          value: JSON.stringify({
            specversion: '1.0',
            id: randomUUID(),
            source: 'bench',
            type: ACTIVATED,
            time: new Date(time + id).toISOString(),
            data: activationData(id, org),
          }),
        })),
      });
    }
    const produced = performance.now();
    await producer.disconnect();
    const running = service;
    const handled = async () =>
      (await running.metrics.eventsHandled.get()).values
        .filter((v) => v.labels.type === ACTIVATED && v.labels.outcome !== 'retried')
        .reduce((n, v) => n + v.value, 0);
    let applied = 0;
    await until(
      async () => {
        applied = await handled();
        return applied >= BURST;
      },
      'the burst',
      () => `${applied} of ${BURST}`,
    );
    const drained = performance.now();
    deciding = false;
    await decisions;
    const during = latencies
      .filter((l) => l.at >= burstStart && l.at <= drained)
      .map((l) => l.ms)
      .sort((a, b) => a - b);
    const failed = latencies.filter((l) => !l.ok).length;
    const lag = (drained - produced) / 1000;
    return {
      lagSeconds: lag,
      row: {
        row: `events: a burst of ${BURST.toLocaleString('en')} while 50 access decisions/s are answered`,
        rate: BURST / ((drained - burstStart) / 1000),
        p50: percentile(during, 50),
        p99: percentile(during, 99),
        ceilingRate,
        note: `lag back to zero ${lag.toFixed(1)} s after the last message was produced (target ≤ 10 s); p50/p99 are the ${during.length} decisions answered during the burst (target p99 < 25 ms)${failed > 0 ? `; ${failed} decisions FAILED` : ''}`,
        ...(failed > 0 ? { failed: `${failed} decisions failed` } : {}),
      },
    };
  } finally {
    await service?.stop();
    await Promise.allSettled([mongo.db(dbName).dropDatabase(), admin.deleteTopics({ topics: [topic] })]);
    await Promise.allSettled([mongo.close(), admin.disconnect()]);
  }
}

if (require.main === module) {
  benchEvents({
    events: Number(process.env.BENCH_EVENTS ?? 100000),
    mongoUrl: process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/',
    kafkaBrokers: process.env.KAFKA_BROKERS || '127.0.0.1:9092',
    schemaRegistryUrl: process.env.SCHEMA_REGISTRY_URL || 'http://127.0.0.1:8081/apis/ccompat/v7',
  }).then(
    ({ rows, figures }) => console.log(`${formatTable(rows)}\n\n${JSON.stringify(figures)}`),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
