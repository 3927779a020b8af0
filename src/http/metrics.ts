import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per process: default Node metrics plus what the service adds. */
export function createMetrics() {
  const registry = new Registry();
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
  return { registry, httpDuration, eventsHandled, eventDuration };
}

export type Metrics = ReturnType<typeof createMetrics>;
