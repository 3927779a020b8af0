import { type Consumer, type EachMessagePayload, type IHeaders, type Kafka, type KafkaMessage, Partitioners, type Producer } from 'kafkajs';
import type { Config } from '../src/config';
import { DependencyUnavailable } from '../src/errors';
import { isTooLarge } from '../src/kafka';
import { describeConsumerCrash } from '../src/kafka-security';
import { dlqTopic } from '../src/kafka-topics';
import type { Logger } from '../src/log';
import type { Metrics, PartitionProgress } from '../src/metrics';
import { backoffDelay, DEFAULT_RETRY, type RetryPolicy, retry } from '../src/retry';
import type { BatchHandler } from './batch';
import { InvalidMessage } from './cloudevents';
import { HandlerFailure, type MessageHandler } from './dispatch';
import { describeError, isRetriable } from './failures';

export type { MessageHandler };

export interface EventConsumer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Why it does not consume since it crashed, until it fetches again (null: no crash since). */
  crashed(): string | null;
}

export type { RetryPolicy };
export { DEFAULT_RETRY };

const DLQ_REASON_MAX = 1000;
/** The largest value a cut dead-letter copy keeps: enough to recognise the message, well under any broker's limit. */
const DLQ_CUT_MAX = 64 * 1024;
/**
 * How long a fetch waits for data when the partitions it asks for are idle, and how long the
 * consumer sleeps when every partition is paused: a partition resumed after its backoff is
 * fetched again within this (kafkajs's default, 5 s, would stretch every backoff by up to 5 s).
 */
const FETCH_WAIT_MS = 1000;
/** The headers a dead-letter copy adds (`x-dlq-*`, `x-original-*`): kept when the message's own are dropped. */
const isOurs = (header: string) => header.startsWith('x-dlq-') || header.startsWith('x-original-');
/** A cut part of a dead-letter copy: half of it, at most DLQ_CUT_MAX. */
const halved = (bytes: Buffer) => bytes.subarray(0, Math.min(Math.floor(bytes.length / 2), DLQ_CUT_MAX));

/** How long one partition's batch may run before it returns, so the next fetch (other partitions' retries among it) is not held up by a backlog. */
const BATCH_HOLD_MS = 1000;

export { dlqTopic };

/** One partition this consumer holds: where it stands, and the failure its next message waits on. */
interface PartitionState {
  topic: string;
  partition: number;
  highWatermark: number;
  /** The next offset to handle: everything before it was handled (or dead-lettered). */
  next: number;
  /** The Kafka timestamp of the message being handled or waiting for a retry. */
  headTimestamp: number | null;
  /**
   * The message at `offset` failed `attempts` times, `poisoned` of them not retriable (only those
   * count toward EVENT_MAX_ATTEMPTS); the partition is paused until `timer` fires.
   */
  failure: { offset: string; attempts: number; poisoned: number; timer: NodeJS.Timeout | null; resume: () => void } | null;
  /**
   * The last run offered to the batch path: up to which offset, and the offsets it took (applied).
   * A fetch cut short by the hold brings the rest of that run again. What the batch took is done;
   * what it left is handled alone: offered once more, the batch would read the whole run again
   * to take nothing (after a crash mid-batch every redelivered record is still to project, and
   * the backlog went 8 messages a second that way).
   */
  offered: { through: number; taken: ReadonlySet<string> };
}

/** How many of `messages` from `i` on (at most `max`) have offsets up to `through`: offered to the batch path already. */
function countOffered(messages: readonly KafkaMessage[], i: number, through: number, max: number): number {
  let n = 0;
  while (n < max && i + n < messages.length && Number(messages[i + n]!.offset) <= through) n++;
  return n;
}

/**
 * The kafkajs consumer: group `KAFKA_GROUP_ID`, topics `KAFKA_TOPICS`, partitions consumed
 * concurrently and the messages of one partition in order.
 *
 * `eachBatch` with manual offset resolution, so a message can be left unresolved without
 * throwing: each offset is resolved only after its handler succeeded or the message was
 * dead-lettered. kafkajs commits what was resolved after each batch, every second during one,
 * and on disconnect; it fetches the next offset after the last resolved one.
 *
 * A failed message is not retried in place: kafkajs fetches again only once every batch of the
 * previous fetch has returned, so one batch waiting out a backoff would hold up every partition.
 * Instead the message's partition is paused (kafkajs then leaves it out of its fetches), its
 * batch returns with the message unresolved, and a timer resumes the partition once the backoff
 * has passed: the next fetch starts again at that message, later messages of the partition still
 * behind it, while the other partitions go on. Attempts are counted per partition and offset in
 * `failures`, kept across the pause, cleared on success, on the dead-letter copy and when the
 * partition is revoked (its next holder starts counting again). A stop or rebalance meanwhile
 * commits nothing past the message, so it is delivered again to whoever holds the partition.
 *
 * What a failure gets (consumers/failures.ts): retriable (a dependency away) is retried until it
 * succeeds; an `InvalidMessage` goes to `<topic>.dlq` (after KAFKA_DLQ_PREFIX) at once; anything else gets
 * `EVENT_MAX_ATTEMPTS` attempts (retriable ones not counted), then the DLQ. The copy keeps key,
 * value and headers and adds `x-dlq-*` headers (a copy too large for the broker is cut); a copy
 * that cannot be written is a dependency failure of the message, retried like the database.
 *
 * A crash restarts it. kafkajs reports a consumer that stopped for good with its CRASH event
 * (node_modules/kafkajs/src/consumer/index.js, `onCrash`: it disconnects the consumer, then restarts
 * it only for a retriable error): a failed group join, such as GROUP_AUTHORIZATION_FAILED or a
 * SASL refusal, reaches `onCrash` from `Runner.start` (runner.js) without `run()` throwing, and a
 * failure while fetching from `scheduleFetchManager`'s catch. kafkajs's own restart is turned off
 * (`restartOnFailure`): every crash is said (`crashed()`, so /readyz), and the consumer is made
 * again, from a new Kafka client (TLS files and the SASL password read again: a rotated secret is
 * taken up), with the service's backoff until it fetches again.
 */
export function createEventConsumer(opts: {
  /** Makes a Kafka client; each start (and restart) makes one, so TLS files and the SASL password are read again. */
  kafka: () => Kafka;
  config: Config;
  log: Logger;
  handle: MessageHandler;
  /** Applies together what it can of a run of messages first (consumers/batch.ts); without it, every message goes alone. */
  handleBatch?: BatchHandler;
  metrics?: Metrics;
  retry?: RetryPolicy;
  partitionsConsumedConcurrently?: number;
}): EventConsumer {
  const { config, log, handle, metrics } = opts;
  const policy = opts.retry ?? DEFAULT_RETRY;
  const maxAttempts = config.EVENT_MAX_ATTEMPTS;
  const batchSize = opts.handleBatch ? config.EVENT_BATCH_SIZE : 1;
  let consumer: Consumer | null = null;
  let producer: Producer | null = null;
  let stopping = new AbortController();
  /** A start under way, which stop() waits for, so a consumer cannot come up after a stop. */
  let starting: Promise<void> | null = null;
  /** The partitions this consumer holds, by `topic/partition`. */
  const partitions = new Map<string, PartitionState>();
  /** Why it does not consume since the last crash; cleared by its next fetch. */
  let crash: string | null = null;
  /** The restart after a crash under way, which stop() waits for. */
  let restarting: Promise<void> | null = null;

  metrics?.reportConsumerProgress(() =>
    [...partitions.values()].map(
      (p): PartitionProgress => ({
        topic: p.topic,
        partition: p.partition,
        lag: Math.max(0, p.highWatermark - p.next),
        oldestUnprocessedAt: p.headTimestamp,
        retrying: p.failure !== null,
      }),
    ),
  );

  const stateOf = (topic: string, partition: number): PartitionState => {
    const key = `${topic}/${partition}`;
    let state = partitions.get(key);
    if (!state) {
      state = { topic, partition, highWatermark: 0, next: 0, headTimestamp: null, failure: null, offered: { through: -1, taken: new Set() } };
      partitions.set(key, state);
    }
    return state;
  };

  /** Resumes a partition paused for a retry (at most once: its timer goes). */
  const resumeNow = (failure: NonNullable<PartitionState['failure']>) => {
    if (!failure.timer) return;
    clearTimeout(failure.timer);
    failure.timer = null;
    try {
      failure.resume();
    } catch {
      // the consumer is gone (stopped): nothing is paused any more
    }
  };

  /** Forgets a partition's failure; a partition still paused for it is fetched again. */
  const release = (state: PartitionState) => {
    if (state.failure) resumeNow(state.failure);
    state.failure = null;
  };

  /** After a rebalance: partitions no longer ours are forgotten (and not left paused, should they come back). */
  const keepOnly = (assignment: Record<string, number[]>) => {
    for (const [key, state] of partitions) {
      if (assignment[state.topic]?.includes(state.partition)) continue;
      release(state);
      partitions.delete(key);
    }
  };

  /**
   * Writes a dead-letter copy. One the broker refuses as too large is sent again smaller, marked
   * `x-dlq-truncated: true` (SPEC): its value halved until it passes, down to empty; then without
   * the message's own headers (the `x-dlq-*` and `x-original-*` ones kept); then its key halved
   * too. False when even that is too large: nothing of the message is left to cut.
   */
  async function sendDeadLetter(topic: string, copy: { key: Buffer | null; value: Buffer | null; headers: IHeaders }): Promise<boolean> {
    let { key, value, headers } = copy;
    for (;;) {
      const truncated = value !== copy.value || headers !== copy.headers || key !== copy.key;
      try {
        await producer!.send({
          topic,
          acks: -1,
          messages: [{ key, value, headers: truncated ? { ...headers, 'x-dlq-truncated': 'true' } : headers }],
        });
        return true;
      } catch (err) {
        if (!isTooLarge(err)) throw err;
        if (value && value.length > 0) value = halved(value);
        else if (headers === copy.headers && Object.keys(headers).some((h) => !isOurs(h))) {
          headers = Object.fromEntries(Object.entries(headers).filter(([h]) => isOurs(h)));
        } else if (key && key.length > 0) key = halved(key);
        else return false;
        log.warn({ topic, value_bytes: value?.length ?? 0, key_bytes: key?.length ?? 0 }, 'dead-letter copy too large for the broker; sent again smaller');
      }
    }
  }

  async function deadLetter(topic: string, partition: number, message: KafkaMessage, err: unknown, attempts: number) {
    const failure = err instanceof HandlerFailure ? err : null;
    const cause = describeError(failure?.cause ?? err);
    const invalid = err instanceof InvalidMessage;
    const reason = (invalid ? cause.message : `failed ${attempts} times (EVENT_MAX_ATTEMPTS): ${cause.message}`).slice(0, DLQ_REASON_MAX);
    const fields = { topic, partition, offset: message.offset, event_id: failure?.eventId, event_type: failure?.eventType, ...failure?.subject, reason };
    if (invalid) log.warn(fields, 'invalid message; copied to the dead-letter topic and skipped');
    else log.error({ ...fields, attempts, err: cause }, 'event handler kept failing; copied to the dead-letter topic and skipped');
    const headers: IHeaders = { ...(message.headers ?? {}) };
    Object.assign(headers, {
      'x-dlq-reason': reason,
      'x-dlq-error': cause.name ?? 'Error',
      'x-dlq-attempts': String(attempts),
      'x-original-topic': topic,
      'x-original-partition': String(partition),
      'x-original-offset': message.offset,
    });
    const eventType = (invalid ? err.eventType : failure?.eventType) ?? 'other';
    if (await sendDeadLetter(dlqTopic(topic, config.KAFKA_DLQ_PREFIX), { key: message.key, value: message.value, headers })) {
      metrics?.eventsHandled.inc({ type: eventType, outcome: 'dead_lettered' });
      return;
    }
    // No copy the broker takes, however small: waiting would stop the partition for good.
    log.error(
      { topic, partition, offset: message.offset, event_id: failure?.eventId, event_type: eventType },
      'dead-letter copy too large for the broker even without value, headers and key; message skipped',
    );
    metrics?.deadLetterTooLarge.inc({ type: eventType });
  }

  /**
   * One attempt at a message: true when it is done (applied, skipped or dead-lettered), false
   * when it must wait: then its partition is paused until its backoff has passed (or the
   * consumer is letting go of it).
   */
  async function attempt(payload: EachMessagePayload, state: PartitionState, stillOurs: () => boolean): Promise<boolean> {
    const { topic, partition, message } = payload;
    const earlier = state.failure?.offset === message.offset ? state.failure : null;
    const previous = earlier?.attempts ?? 0;
    release(state); // a batch of this partition means its retry, if any, is due
    const attempts = previous + 1;
    let err: unknown;
    try {
      await handle(payload);
      if (previous > 0) log.info({ topic, partition, offset: message.offset, attempts }, 'event handler recovered');
      return true;
    } catch (e) {
      err = e;
    }
    if (!stillOurs()) return false; // stopping or revoked: whoever gets the message next tries it
    const retriable = isRetriable(err);
    // A dependency away (retriable) spends none of the message's budget: a long outage must not
    // leave a valid event one bug-like failure away from the DLQ once it ends.
    const poisoned = (earlier?.poisoned ?? 0) + (retriable ? 0 : 1);
    if (!retriable && (err instanceof InvalidMessage || poisoned >= maxAttempts)) {
      try {
        await deadLetter(topic, partition, message, err, poisoned);
        return true;
      } catch (dlqErr) {
        // Not copied: the DLQ is a dependency (SPEC), so the message waits like one, and is tried again.
        metrics?.deadLetterFailures.inc();
        err = new DependencyUnavailable('the dead-letter topic', dlqErr);
      }
    }
    const delay = backoffDelay(attempts, policy);
    const failure = err instanceof HandlerFailure ? err : null;
    metrics?.eventsHandled.inc({ type: failure?.eventType ?? 'other', outcome: 'retried' });
    log.error(
      {
        topic,
        partition,
        offset: message.offset,
        event_id: failure?.eventId,
        event_type: failure?.eventType,
        ...failure?.subject,
        attempt: attempts,
        retriable: isRetriable(err),
        retry_in_ms: delay,
        err: describeError(failure?.cause ?? err),
      },
      'event handler failed; retrying',
    );
    const failed: NonNullable<PartitionState['failure']> = { offset: message.offset, attempts, poisoned, timer: null, resume: payload.pause() };
    failed.timer = setTimeout(() => resumeNow(failed), delay);
    failed.timer.unref();
    state.failure = failed;
    return false;
  }

  /**
   * The offsets of `run` the batch handler applied together; empty when there is none, the run
   * is one message, or the batch failed (then each message of the run is handled alone, where
   * its failure is retried or dead-lettered as its own).
   */
  async function applyTogether(topic: string, partition: number, run: KafkaMessage[]): Promise<Set<string>> {
    if (!opts.handleBatch || run.length < 2) return new Set();
    try {
      return await opts.handleBatch({ topic, partition, messages: run });
    } catch (err) {
      log.warn(
        { topic, partition, first_offset: run[0]!.offset, messages: run.length, err: describeError(err) },
        'batch failed; its messages are handled one by one',
      );
      return new Set();
    }
  }

  async function start(signal: AbortSignal) {
    const kafka = opts.kafka();
    const c = kafka.consumer({
      groupId: config.KAFKA_GROUP_ID,
      // kafkajs's default retries (5); no restart of its own: restartAfterCrash does it, for any crash.
      retry: { retries: 5, restartOnFailure: async () => false },
      allowAutoTopicCreation: true,
      maxWaitTimeInMs: FETCH_WAIT_MS,
      sessionTimeout: config.KAFKA_SESSION_TIMEOUT_MS,
      // kafkajs's own ratio (30 s and 3 s by default); Kafka wants it under a third of the session.
      heartbeatInterval: Math.floor(config.KAFKA_SESSION_TIMEOUT_MS / 10),
    });
    // Few retries of its own: a copy that cannot be written becomes the message's failure,
    // retried with its partition paused, rather than a send holding up the batch.
    const p = kafka.producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner, retry: { retries: 2 } });
    c.on(c.events.GROUP_JOIN, ({ payload }) => keepOnly(payload.memberAssignment));
    let crashedWhileStarting: Error | null = null;
    c.on(c.events.CRASH, ({ payload }) => {
      crash = describeConsumerCrash(payload.error, config);
      if (consumer === c) restartAfterCrash(payload.error);
      else crashedWhileStarting = payload.error; // run() returns all the same: thrown below
    });
    c.on(c.events.FETCH, () => {
      crash = null;
    });
    try {
      await Promise.all([c.connect(), p.connect()]);
      await c.subscribe({ topics: [...config.KAFKA_TOPICS], fromBeginning: true });
      await c.run({
        autoCommit: true,
        autoCommitInterval: 1000,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently ?? 3,
        eachBatch: async ({ batch, resolveOffset, heartbeat, pause, isRunning, isStale, commitOffsetsIfNecessary }) => {
          const stillOurs = () => isRunning() && !isStale() && !stopping.signal.aborted;
          const state = stateOf(batch.topic, batch.partition);
          state.highWatermark = Number(batch.highWatermark);
          const since = Date.now();
          const { messages } = batch;
          for (let i = 0; i < messages.length; ) {
            if (!stillOurs()) return;
            // kafkajs fetches again only once every batch of a fetch has returned: a backlog's
            // batch held for minutes would hold every other partition's retry as long. The rest
            // of it is fetched again from the first message not resolved.
            if (Date.now() - since > BATCH_HOLD_MS) return;
            // A message waiting for its retry goes alone: its attempts are counted per message.
            // The rest of a run offered before goes as the batch path answered it then.
            const offeredBefore = countOffered(messages, i, state.offered.through, batchSize);
            const run = messages.slice(i, i + (state.failure?.offset === messages[i]!.offset ? 1 : offeredBefore || batchSize));
            if (offeredBefore === 0) state.offered = { through: Number(run.at(-1)!.offset), taken: await applyTogether(batch.topic, batch.partition, run) };
            const together = state.offered.taken;
            let resolved: string | null = null;
            let alone = 0;
            const applied = Date.now();
            for (const message of run) {
              state.next = Number(message.offset);
              state.headTimestamp = Number(message.timestamp);
              // One applied together is done: resolved even when stopping, so its offset is committed
              // with the rest (not once the partition is another member's).
              if (!together.has(message.offset) || isStale()) {
                if (!stillOurs()) break;
                // The hold counts the messages applied alone too: a run of them is as long as a
                // whole batch was. Counted from the end of the run's batch (at least one message,
                // then up to the hold), so a slow batch, done again at each fetch, still moves on.
                if (alone > 0 && Date.now() - applied > BATCH_HOLD_MS) break;
                alone++;
                const payload = { topic: batch.topic, partition: batch.partition, message, heartbeat, pause };
                if (!(await attempt(payload, state, stillOurs))) break;
              }
              resolveOffset(message.offset);
              resolved = message.offset;
              state.next = Number(message.offset) + 1;
              state.headTimestamp = null;
            }
            if (run.length > 1) {
              log.debug(
                {
                  topic: batch.topic,
                  partition: batch.partition,
                  first_offset: run[0]!.offset,
                  last_offset: resolved,
                  messages: run.length,
                  together: together.size,
                },
                'run handled',
              );
            }
            if (resolved !== run.at(-1)!.offset) return;
            i += run.length;
            // Committed after each run's writes (and every second by kafkajs): a restart redoes at most one run.
            await commitOffsetsIfNecessary();
            // kafkajs heartbeats only between batches; a batch of a backlog (thousands of
            // messages) takes longer than the session timeout, and the member would be evicted
            // mid-batch. heartbeat() is throttled to the heartbeat interval, so this is cheap.
            await heartbeat();
          }
        },
      });
      if (crashedWhileStarting) throw crashedWhileStarting;
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

  const forgetAll = () => {
    for (const state of partitions.values()) if (state.failure?.timer) clearTimeout(state.failure.timer);
    partitions.clear();
  };

  /**
   * After a crash of the running consumer: its clients are closed and new ones started with the
   * service's backoff until one starts (a stop ends the retries). Partitions paused for a retry
   * are forgotten: their messages, not committed, are fetched again.
   */
  function restartAfterCrash(err: Error) {
    if (stopping.signal.aborted) return; // stopping: nothing to restart
    log.error({ group: config.KAFKA_GROUP_ID, err: describeError(err) }, `consumer crashed; restarting it: ${crash}`);
    const crashed = { c: consumer, p: producer };
    consumer = null;
    producer = null;
    forgetAll();
    restarting = (async () => {
      await Promise.allSettled([crashed.c?.disconnect(), crashed.p?.disconnect()]);
      await retry(() => start(stopping.signal), {
        policy,
        signal: stopping.signal,
        onFailure: (failure, attempt, delay) => {
          // Why this restart failed (a refused connection throws; a refused join crashes): /readyz says the latest.
          crash = describeConsumerCrash(failure, config);
          log.warn({ group: config.KAFKA_GROUP_ID, attempt, delay_ms: delay, reason: crash }, 'consumer not restarted yet; retrying');
        },
      });
    })()
      .catch(() => undefined) // stopped meanwhile
      .finally(() => {
        restarting = null;
      });
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
    crashed: () => crash,
    async stop() {
      stopping.abort();
      await starting?.catch(() => undefined);
      await restarting;
      forgetAll(); // no resume may reach a consumer being disconnected
      if (!consumer) return;
      // disconnect() waits for the running eachBatch calls, which return at their next message,
      // and commits the offsets resolved so far: never past a message not yet done.
      await consumer.disconnect();
      await producer?.disconnect();
      consumer = null;
      producer = null;
      forgetAll();
      log.info('consumer stopped');
    },
  };
}
