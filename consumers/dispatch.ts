import type { EachMessagePayload } from 'kafkajs';
import type { Db } from 'mongodb';
import { runInChangeContext } from '../src/db/change-context';
import { Invalid, ServiceError } from '../src/errors';
import type { Logger } from '../src/log';
import type { Metrics } from '../src/metrics';
import { type AvroDecoder, createMessageDecoder } from './avro';
import { type CloudEvent, InvalidMessage } from './cloudevents';
import { isRetriable } from './failures';
import { HANDLERS } from './handlers';
import type { Subject } from './handlers/handler';

/** What the consumer does with one message; resolves when the message is fully handled. */
export type MessageHandler = (payload: EachMessagePayload) => Promise<void>;

/**
 * A handler that failed (the database, a bug): the consumer retries it, until it succeeds when
 * `retriable` (its cause may pass by itself: consumers/failures.ts), else a bounded number of
 * times. Carries what the error log names: the event id, its type and the user id or course key.
 */
export class HandlerFailure extends ServiceError {
  override readonly name = 'HandlerFailure';
  readonly retriable: boolean;
  constructor(
    readonly eventId: string,
    readonly eventType: string,
    /** Empty when the event could not be read yet (its decoding failed). */
    readonly subject: Subject | Record<string, never>,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.retriable = isRetriable(cause);
  }
}

/** A binary-mode header's text, or undefined (absent, or without a value): for logs only. */
function envelopeHeader(message: EachMessagePayload['message'], name: string): string | undefined {
  const value = message.headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first ? first.toString('utf8').slice(0, 200) : undefined;
}

/**
 * An event without `time` is applied at its record's Kafka timestamp (docs/event-core.md): its
 * record's history keeps the earliest one it is given, so a later record of the event with an
 * earlier timestamp moves it back.
 */
const atKafkaTime = (event: CloudEvent): CloudEvent => ({ ...event, stamp: { ...event.stamp, time: event.eventTime, provisional: true } });

/**
 * The service's message handler: decode the CloudEvent (JSON in either binding, or the Open edX
 * event bus's Avro through the schema registry: consumers/avro.ts), pick the handler by
 * `type` whatever the topic, validate its `data`, apply it. Throws InvalidMessage for a
 * message that can never be applied (the consumer dead-letters it) and HandlerFailure for one
 * that failed this time (the consumer retries it, as its `retriable` says). Types not handled
 * here are skipped.
 */
export function createDispatcher(deps: {
  db: Db;
  log: Logger;
  metrics: Metrics;
  defaultOrganization?: string | null;
  avro?: AvroDecoder | null;
}): MessageHandler {
  const { db, log, metrics } = deps;
  const defaultOrganization = deps.defaultOrganization ?? null;
  const decode = createMessageDecoder(deps.avro ?? null);
  return async ({ topic, partition, message }) => {
    let event: CloudEvent;
    try {
      event = await decode(message);
    } catch (err) {
      if (err instanceof InvalidMessage) throw err;
      // The registry away: the failure log names the event waiting for it (its envelope is in headers).
      throw new HandlerFailure(envelopeHeader(message, 'ce_id') ?? 'unknown', envelopeHeader(message, 'ce_type') ?? 'unknown', {}, err);
    }
    const handler = HANDLERS.get(event.type);
    if (!handler) {
      // Label 'other', not the type: a label per unknown type would grow without bound.
      metrics.eventsHandled.inc({ type: 'other', outcome: 'skipped' });
      log.debug({ topic, partition, offset: message.offset, event_id: event.id, event_type: event.type.slice(0, 200) }, 'event type not handled; skipped');
      return;
    }
    let parsed;
    try {
      parsed = handler.parse(event.data);
    } catch (err) {
      if (err instanceof InvalidMessage) err.eventType = handler.type;
      throw err;
    }
    const { subject } = parsed;
    const stopTimer = metrics.eventDuration.startTimer({ type: handler.type });
    let outcome;
    try {
      // What the event changes is the LMS's doing (not audited); the event id traces it.
      const ctx = { db, event, data: parsed.data, defaultOrganization };
      outcome = await runInChangeContext({ cause: 'event', actor: { type: 'lms' }, requestId: event.id, audit: false }, () =>
        handler.apply(event.time === undefined ? { ...ctx, event: atKafkaTime(event) } : ctx),
      );
    } catch (err) {
      if (err instanceof InvalidMessage || err instanceof Invalid) {
        // A domain rule's refusal can never pass either: dead-lettered with its message.
        const invalid = err instanceof InvalidMessage ? err : new InvalidMessage(err.message);
        invalid.eventType = handler.type;
        throw invalid;
      }
      throw new HandlerFailure(event.id, handler.type, subject, err);
    }
    stopTimer();
    metrics.eventsHandled.inc({ type: handler.type, outcome });
    log.debug(
      { topic, partition, offset: message.offset, event_id: event.id, event_type: handler.type, ...subject, outcome, mode: event.mode },
      'event handled',
    );
  };
}
