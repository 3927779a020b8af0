import { setTimeout as sleep } from 'node:timers/promises';
import { type Consumer, type EachMessagePayload, type IHeaders, type Kafka, Partitioners, type Producer } from 'kafkajs';
import type { Config } from '../src/config';
import type { Logger } from '../src/log';
import type { Metrics } from '../src/metrics';
import { DEFAULT_RETRY, type RetryPolicy, retry } from '../src/retry';
import { InvalidMessage } from './cloudevents';
import { HandlerFailure, type MessageHandler } from './dispatch';

export type { MessageHandler };

export interface EventConsumer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** False while a handler keeps failing (the consumer is retrying), for /readyz. */
  healthy(): boolean;
}

export type { RetryPolicy };
export { DEFAULT_RETRY };

/** The longest stretch without a heartbeat while waiting to retry (session timeout is 30 s). */
const HEARTBEAT_EVERY_MS = 1000;
const DLQ_REASON_MAX = 1000;

export const dlqTopic = (topic: string) => `${topic}.dlq`;

/**
 * The kafkajs consumer: group `KAFKA_GROUP_ID`, topics `KAFKA_TOPICS`, partitions consumed
 * concurrently and the messages of one partition in order.
 *
 * `eachBatch` with manual offset resolution rather than `eachMessage`, because only then can a
 * message be left unresolved without throwing: each offset is resolved only after its handler
 * succeeded (or the message was dead-lettered), a failing handler is retried in place with capped
 * exponential backoff (heartbeating, so the group keeps the member) and later messages of its
 * partition wait, and a stop or rebalance during the wait leaves the loop at once with the
 * message unresolved, so it is delivered again. kafkajs commits what was resolved after each
 * batch, every second during one, and on disconnect.
 *
 * An `InvalidMessage` goes to `<topic>.dlq` (key, value and headers unchanged, plus `x-dlq-*`
 * headers) and is skipped; a failure to write the DLQ is retried like any handler failure.
 */
export function createEventConsumer(opts: {
  kafka: Kafka;
  config: Config;
  log: Logger;
  handle: MessageHandler;
  metrics?: Metrics;
  retry?: RetryPolicy;
  partitionsConsumedConcurrently?: number;
}): EventConsumer {
  const { kafka, config, log, handle, metrics } = opts;
  const policy = opts.retry ?? DEFAULT_RETRY;
  let consumer: Consumer | null = null;
  let producer: Producer | null = null;
  let stopping = new AbortController();
  /** A start under way, which stop() waits for, so a consumer cannot come up after a stop. */
  let starting: Promise<void> | null = null;
  /** `topic/partition` of each partition whose current message keeps failing. */
  const failing = new Set<string>();

  async function deadLetter(topic: string, partition: number, message: EachMessagePayload['message'], err: InvalidMessage) {
    const reason = err.message.slice(0, DLQ_REASON_MAX);
    log.warn({ topic, partition, offset: message.offset, reason }, 'invalid message; copied to the dead-letter topic and skipped');
    const headers: IHeaders = { ...(message.headers ?? {}) };
    Object.assign(headers, {
      'x-dlq-reason': reason,
      'x-original-topic': topic,
      'x-original-partition': String(partition),
      'x-original-offset': message.offset,
    });
    await producer!.send({ topic: dlqTopic(topic), acks: -1, messages: [{ key: message.key, value: message.value, headers }] });
    metrics?.eventsHandled.inc({ type: err.eventType ?? 'other', outcome: 'dead_lettered' });
  }

  /** Waits `ms`, heartbeating; false when the wait should end the loop (stop, rebalance, lost partition). */
  async function pause(ms: number, heartbeat: () => Promise<void>, stillOurs: () => boolean): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      try {
        await sleep(Math.min(HEARTBEAT_EVERY_MS, until - Date.now()), undefined, { signal: stopping.signal });
        await heartbeat();
      } catch {
        return false; // aborted by stop(), or the heartbeat says a rebalance is under way
      }
      if (!stillOurs()) return false;
    }
    return !stopping.signal.aborted && stillOurs();
  }

  /** Handles one message until it is done (true) or the consumer must let go of it (false). */
  async function process(payload: EachMessagePayload, stillOurs: () => boolean): Promise<boolean> {
    const { topic, partition, message } = payload;
    const key = `${topic}/${partition}`;
    const attemptOnce = async (attempt: number) => {
      try {
        await handle(payload);
      } catch (err) {
        if (!(err instanceof InvalidMessage)) throw err;
        await deadLetter(topic, partition, message, err);
      }
      if (failing.delete(key)) log.info({ topic, partition, offset: message.offset, attempts: attempt }, 'handler recovered');
    };
    const reportFailure = (err: unknown, attempt: number, delay: number) => {
      failing.add(key);
      const failure = err instanceof HandlerFailure ? err : null;
      const cause = (failure?.cause ?? err) as Error;
      metrics?.eventsHandled.inc({ type: failure?.eventType ?? 'other', outcome: 'retried' });
      log.error(
        {
          topic,
          partition,
          offset: message.offset,
          event_id: failure?.eventId,
          event_type: failure?.eventType,
          ...failure?.subject,
          attempt,
          retry_in_ms: delay,
          err: { name: cause?.name, message: cause?.message, code: (cause as { code?: unknown })?.code, stack: cause?.stack },
        },
        'event handler failed; retrying',
      );
    };
    try {
      await retry(attemptOnce, { policy, onFailure: reportFailure, wait: (ms) => pause(ms, payload.heartbeat, stillOurs) });
      return true;
    } catch {
      failing.delete(key); // no longer ours to retry: whoever gets it next reports on it
      return false;
    }
  }

  async function start(signal: AbortSignal) {
    const c = kafka.consumer({ groupId: config.KAFKA_GROUP_ID, allowAutoTopicCreation: true });
    const p = kafka.producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner });
    try {
      await Promise.all([c.connect(), p.connect()]);
      await c.subscribe({ topics: [...config.KAFKA_TOPICS], fromBeginning: true });
      await c.run({
        autoCommit: true,
        autoCommitInterval: 1000,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently ?? 3,
        eachBatch: async ({ batch, resolveOffset, heartbeat, pause: pausePartition, isRunning, isStale, commitOffsetsIfNecessary }) => {
          const stillOurs = () => isRunning() && !isStale() && !stopping.signal.aborted;
          for (const message of batch.messages) {
            if (!stillOurs()) return;
            const payload = { topic: batch.topic, partition: batch.partition, message, heartbeat, pause: pausePartition };
            if (!(await process(payload, stillOurs))) return;
            resolveOffset(message.offset);
            await commitOffsetsIfNecessary();
            // kafkajs heartbeats only between batches; a batch of a backlog (thousands of
            // messages) takes longer than the session timeout, and the member would be evicted
            // mid-batch. heartbeat() is throttled to the heartbeat interval, so this is cheap.
            await heartbeat();
          }
        },
      });
    } catch (err) {
      await Promise.allSettled([c.disconnect(), p.disconnect()]);
      throw err;
    }
    if (signal.aborted) {
      await Promise.allSettled([c.disconnect(), p.disconnect()]);
      return;
    }
    consumer = c;
    producer = p;
    log.info({ topics: config.KAFKA_TOPICS, group: config.KAFKA_GROUP_ID }, 'consumer started');
  }

  return {
    async start() {
      stopping = new AbortController();
      starting = start(stopping.signal);
      try {
        await starting;
      } finally {
        starting = null;
      }
    },
    async stop() {
      stopping.abort();
      await starting?.catch(() => undefined);
      if (!consumer) return;
      // disconnect() waits for the running eachBatch calls, which leave their retry loops at
      // once, and commits the offsets resolved so far; the rest is delivered again.
      await consumer.disconnect();
      await producer?.disconnect();
      consumer = null;
      producer = null;
      failing.clear();
      log.info('consumer stopped');
    },
    healthy: () => failing.size === 0,
  };
}
