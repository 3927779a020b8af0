import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Where one partition the consumer holds stands (consumers/consumer.ts reports it). */
export interface PartitionProgress {
  topic: string;
  partition: number;
  /** The partition's high watermark minus the next offset to handle, as of its last fetch. */
  lag: number;
  /** The Kafka timestamp (ms) of the message being handled or waiting for a retry; null: none. */
  oldestUnprocessedAt: number | null;
  /** Its next message failed and waits for another attempt. */
  retrying: boolean;
}

/** One registry per process: default Node metrics plus what the service adds. */
export function createMetrics() {
  const registry = new Registry();
  /** Read at every scrape, so ages are those of the scrape and a revoked partition is gone. */
  let consumerProgress: () => readonly PartitionProgress[] = () => [];
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const eventsHandled = new Counter({
    name: 'events_handled_total',
    help: 'Kafka events by CloudEvents type and outcome (applied, duplicate, stale, dead_lettered, retried, skipped).',
    labelNames: ['type', 'outcome'] as const,
    registers: [registry],
  });
  const eventDuration = new Histogram({
    name: 'event_handler_duration_seconds',
    help: 'Time to apply one Kafka event, by CloudEvents type (successful attempts).',
    labelNames: ['type'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const changesPublished = new Counter({
    name: 'changes_published_total',
    help: 'Change events published to CHANGES_TOPIC, by CloudEvents type (re-publications after a crash count again).',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const changesPending = new Gauge({
    name: 'changes_pending',
    help: 'Outbox intents not yet resolved (published and audited), as the change relay last counted them.',
    registers: [registry],
  });
  const changesLag = new Gauge({
    name: 'changes_lag_seconds',
    help: 'Age of the oldest unresolved outbox intent when the change relay last looked (0: none).',
    registers: [registry],
  });
  const auditRecorded = new Counter({
    name: 'audit_records_total',
    help: 'Audit records written by the change relay.',
    registers: [registry],
  });
  const deadLetterFailures = new Counter({
    name: 'dead_letter_write_failures_total',
    help: 'Dead-letter copies that could not be written (no permission, no topic, broker away): each one retried like a dependency.',
    registers: [registry],
  });
  const deadLetterTooLarge = new Counter({
    name: 'dead_letter_too_large_total',
    help: 'Messages skipped because the broker refused their dead-letter copy as too large even without value, headers and key: logged at error level with topic, partition and offset.',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const changesUnpublishable = new Counter({
    name: 'changes_unpublishable_total',
    help: 'Change events the broker refused as too large even alone: logged at error level with their ids and skipped.',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const relayFailures = new Counter({
    name: 'change_relay_failures_total',
    help: 'Change relay steps that failed (database or broker away) and were retried with backoff.',
    registers: [registry],
  });
  const relayLeader = new Gauge({
    name: 'change_relay_leader',
    help: '1 when this process holds the change relay lease (one process per database does).',
    registers: [registry],
  });
  const consumerRetrying = new Gauge({
    name: 'consumer_messages_retrying',
    help: 'Messages whose handler failed and that wait for another attempt (their partition is paused meanwhile).',
    registers: [registry],
    collect() {
      this.set(consumerProgress().filter((p) => p.retrying).length);
    },
  });
  /** A gauge per partition the consumer holds, computed from its progress at every scrape. */
  const perPartition = (name: string, help: string, value: (p: PartitionProgress, now: number) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['topic', 'partition'] as const,
      registers: [registry],
      collect() {
        this.reset(); // a revoked partition leaves no stale series
        const now = Date.now();
        for (const p of consumerProgress()) this.set({ topic: p.topic, partition: String(p.partition) }, value(p, now));
      },
    });
  const consumerOldestAge = perPartition(
    'consumer_oldest_unprocessed_age_seconds',
    'Per partition, the age (by its Kafka timestamp) of the message being handled or waiting for a retry; 0: none.',
    (p, now) => (p.oldestUnprocessedAt === null ? 0 : Math.max(0, now - p.oldestUnprocessedAt) / 1000),
  );
  const consumerLag = perPartition(
    'consumer_lag_messages',
    'Per partition, messages not yet handled: the high watermark minus the next offset to handle, as of its last fetch.',
    (p) => p.lag,
  );
  return {
    registry,
    httpDuration,
    eventsHandled,
    eventDuration,
    changesPublished,
    changesPending,
    changesLag,
    auditRecorded,
    changesUnpublishable,
    deadLetterFailures,
    deadLetterTooLarge,
    relayFailures,
    relayLeader,
    consumerRetrying,
    consumerOldestAge,
    consumerLag,
    /** The consumer says where its partitions stand (one consumer per process). */
    reportConsumerProgress(source: () => readonly PartitionProgress[]) {
      consumerProgress = source;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
