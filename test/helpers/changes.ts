import { randomUUID } from 'node:crypto';
import { type Consumer, Kafka, logLevel } from 'kafkajs';
import type { ChangeEvent } from '../../src/changes/events';
import { READER_FETCH_WAIT_MS, untilBrokerKnows, waitFor } from './events';
import { KAFKA_BROKERS } from './stack';

/** One change event as a consumer received it. */
export interface Received {
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: Record<string, string>;
  event: ChangeEvent;
}

/**
 * Reads a change topic from its beginning, the way an LMS would (its own consumer group), and
 * keeps every message in arrival order (per partition: offset order). Creates the topic with
 * `partitions` (and the topic settings `configEntries`, e.g. a smaller `max.message.bytes`)
 * unless it exists.
 *
 * Like the service's own consumer (consumers/consumer.ts), it is made again after any crash:
 * kafkajs restarts a consumer only after a retriable error (node_modules/kafkajs/src/consumer/index.js,
 * `onCrash`), and a broker restarted under it can end it with another. An offset received twice
 * (its commit was lost with the consumer) is kept once. `problems` holds its crashes and kafkajs's
 * last five warnings, for a test's failure message.
 */
export async function changeReader(topic: string, brokers = KAFKA_BROKERS, partitions = 3, configEntries: { name: string; value: string }[] = []) {
  const problems = { crashes: [] as string[], warnings: [] as string[] };
  const warn = (msg: string) => {
    problems.warnings.push(msg.slice(0, 200));
    if (problems.warnings.length > 5) problems.warnings.shift();
  };
  const kafka = new Kafka({
    clientId: 'changes-reader',
    brokers: brokers.split(','),
    logLevel: logLevel.WARN,
    logCreator: () => (entry) => warn(`${entry.log.message}${entry.log.error ? `: ${entry.log.error}` : ''}`),
    retry: { retries: 30, maxRetryTime: 5000 },
  });
  const admin = kafka.admin();
  await admin.connect();
  await untilBrokerKnows(() => admin.createTopics({ topics: [{ topic, numPartitions: partitions, configEntries }], waitForLeaders: true }));
  await admin.disconnect();
  const groupId = `changes-reader-${randomUUID()}`;
  const received: Received[] = [];
  const offsets = new Set<string>();
  let consumer: Consumer | null = null;
  let closed = false;
  const start = async (): Promise<void> => {
    const c = kafka.consumer({ groupId, retry: { retries: 30, maxRetryTime: 5000 }, maxWaitTimeInMs: READER_FETCH_WAIT_MS });
    consumer = c;
    c.on(c.events.CRASH, ({ payload }) => {
      problems.crashes.push(`${payload.restart ? 'kafkajs restarts it' : 'made again'}: ${payload.error.name}: ${payload.error.message}`);
      if (!payload.restart && !closed) setTimeout(() => void start().catch((e) => problems.crashes.push(`start failed: ${e}`)), 1000);
    });
    await c.connect();
    // A topic just created may not be in every broker's metadata yet.
    await untilBrokerKnows(() => c.subscribe({ topic, fromBeginning: true }));
    await c.run({
      eachMessage: async ({ partition, message }) => {
        if (offsets.has(`${partition}:${message.offset}`)) return;
        offsets.add(`${partition}:${message.offset}`);
        const value = message.value!.toString('utf8');
        const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
        received.push({
          partition,
          offset: Number(message.offset),
          key: message.key!.toString('utf8'),
          value,
          headers,
          event: JSON.parse(value) as ChangeEvent,
        });
      },
    });
  };
  await start();
  return {
    received,
    /** Its crashes, and kafkajs's last five warnings. */
    problems,
    /** Waits until some received event satisfies `match`; returns the first that does. */
    async find(match: (e: ChangeEvent) => boolean, timeoutMs = 30000): Promise<Received> {
      const hit = await waitFor(async () => received.find((r) => match(r.event)), Boolean, timeoutMs);
      return hit!;
    },
    /** The newest event (highest version) of each subject. */
    latest(): Map<string, ChangeEvent> {
      const out = new Map<string, ChangeEvent>();
      for (const r of received) {
        const seen = out.get(r.event.subject);
        if (!seen || (seen.data.version as number) < (r.event.data.version as number)) out.set(r.event.subject, r.event);
      }
      return out;
    },
    close: async () => {
      closed = true;
      await consumer?.disconnect();
    },
  };
}

export type ChangeReader = Awaited<ReturnType<typeof changeReader>>;

/** The bytes of received messages' keys, values and headers: less than the record batch that carried them. */
export const payloadBytes = (received: readonly Received[]) =>
  received.reduce(
    (n, r) =>
      n +
      Buffer.byteLength(r.key) +
      Buffer.byteLength(r.value) +
      Object.entries(r.headers).reduce((h, [k, v]) => h + Buffer.byteLength(k) + Buffer.byteLength(v), 0),
    0,
  );

/**
 * The ordering promise, checked on what a consumer received: every subject's events are on one
 * partition and their versions only grow along it.
 */
export function orderViolations(received: Received[]): string[] {
  const bySubject = new Map<string, Received[]>();
  for (const r of received) bySubject.set(r.event.subject, [...(bySubject.get(r.event.subject) ?? []), r]);
  const problems: string[] = [];
  for (const [subject, list] of bySubject) {
    if (new Set(list.map((r) => r.partition)).size > 1) problems.push(`${subject}: on several partitions`);
    const sorted = [...list].sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!.event;
      const cur = sorted[i]!.event;
      // Every publication (a re-publication too) takes a fresh, higher version.
      if ((cur.data.version as number) <= (prev.data.version as number)) problems.push(`${subject}: version ${cur.data.version} after ${prev.data.version}`);
    }
  }
  return problems;
}

/**
 * In order per record: versions grow along each partition, and the first event carrying each
 * acknowledged write's request id comes in the order the writes were made (`acked`: subject ->
 * request ids in write order).
 */
export function expectInOrderPerRecord(received: Received[], acked: ReadonlyMap<string, readonly string[]>): void {
  expect(orderViolations(received)).toEqual([]);
  for (const [subject, rids] of acked) {
    const seen: string[] = [];
    for (const r of received.filter((x) => x.event.subject === subject).sort((a, b) => a.offset - b.offset)) {
      const rid = r.event.data.request_id as string;
      if (rids.includes(rid) && !seen.includes(rid)) seen.push(rid);
    }
    expect({ subject, order: seen }).toEqual({ subject, order: [...rids] });
  }
}
