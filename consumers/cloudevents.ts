import type { IHeaders, KafkaMessage } from 'kafkajs';
import { type EventStamp, eventKey, eventTimeFromMillis, normalizeEventTime, UnrepresentableTime } from '../src/domain/event-time';
import { ServiceError } from '../src/errors';
import { ajv, describeErrors, type Infer } from '../src/validation';

/**
 * CloudEvents 1.0 over Kafka, both content modes of the Kafka protocol binding, decoded into one
 * envelope. Only the attributes the service reads are declared: the shared ajv instance drops
 * undeclared properties, which here just means extensions are not carried along.
 */
export const cloudEventSchema = {
  type: 'object',
  properties: {
    specversion: { const: '1.0' },
    id: { type: 'string', minLength: 1 },
    source: { type: 'string', minLength: 1 },
    type: { type: 'string', minLength: 1 },
    time: { type: 'string', format: 'date-time' },
    subject: { type: 'string' },
    datacontenttype: { type: 'string' },
    data: {},
  },
  required: ['specversion', 'id', 'source', 'type'],
} as const;

export type CloudEvent = Infer<typeof cloudEventSchema> & {
  /** `time` normalized for comparison (event-time.ts); the Kafka record timestamp when the event has none. */
  eventTime: string;
  /** Its time and identity (`source` and `id`), as records remember them (docs/events.md). */
  stamp: EventStamp;
  /** Which binding the message used: JSON structured or binary mode, or the Open edX event bus's Avro (consumers/avro.ts). */
  mode: 'structured' | 'binary' | 'avro';
};

/** A message that can never be handled (not JSON, not a CloudEvent, bad `data`): it goes to the DLQ at once. */
export class InvalidMessage extends ServiceError {
  override readonly name = 'InvalidMessage';
  readonly retriable = false;
  /** Set once the type is known to be one the service handles (a metrics label). */
  eventType: string | undefined;
}

const validateEnvelope = ajv.compile(cloudEventSchema);

/** A header's text (the first, when repeated); one present without a value (Kafka allows a null header value) can never be read. */
const header = (headers: IHeaders | undefined, name: string): string | undefined => {
  const value = headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  if (first === null) throw new InvalidMessage(`header ${name.slice(0, 100)} has no value`);
  return first === undefined ? undefined : first.toString('utf8');
};

function parseJson(bytes: Buffer | null, what: string): unknown {
  if (bytes === null || bytes.length === 0) throw new InvalidMessage(`${what} is empty`);
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new InvalidMessage(`${what} is not JSON`);
  }
}

/** A binary-mode message's attributes: its `ce_*` headers, and `content-type` as `datacontenttype`. */
function headerAttributes(headers: IHeaders | undefined): Record<string, unknown> {
  const attributes: Record<string, unknown> = {};
  for (const name of Object.keys(headers ?? {})) {
    if (name.startsWith('ce_')) attributes[name.slice(3)] = header(headers, name);
  }
  const contentType = header(headers, 'content-type');
  if (contentType !== undefined) attributes.datacontenttype = contentType;
  return attributes;
}

/** Checks the envelope and orders it in time: the event, or InvalidMessage. */
function toCloudEvent(envelope: unknown, mode: CloudEvent['mode'], timestamp: string): CloudEvent {
  if (typeof envelope !== 'object' || envelope === null || Array.isArray(envelope)) {
    throw new InvalidMessage('not a CloudEvent: the value is not a JSON object');
  }
  if (!validateEnvelope(envelope)) {
    throw new InvalidMessage(`not a CloudEvent: ${describeErrors(validateEnvelope.errors)}`);
  }
  const event = envelope as Infer<typeof cloudEventSchema>;
  let eventTime: string;
  try {
    eventTime = event.time !== undefined ? normalizeEventTime(event.time) : eventTimeFromMillis(timestamp);
  } catch (err) {
    // A valid time the service cannot order exactly names why (src/domain/event-time.ts).
    if (err instanceof UnrepresentableTime) throw new InvalidMessage(`time ${JSON.stringify(event.time?.slice(0, 64))}: ${err.message}`);
    throw new InvalidMessage('not a CloudEvent: time is not a usable RFC 3339 date-time');
  }
  return { ...event, eventTime, stamp: { time: eventTime, id: eventKey(event.source, event.id), identity: { source: event.source, id: event.id } }, mode };
}

type Message = Pick<KafkaMessage, 'value' | 'headers' | 'timestamp'>;

/**
 * Decodes one Kafka message. Binary mode is recognised, as the binding says, by a
 * `ce_specversion` header (its attributes are the `ce_*` headers, the value is `data`);
 * anything else is read as structured mode (the value is the JSON envelope), whatever its
 * `content-type` says, since some producers leave it out.
 */
export function decodeCloudEvent(message: Message): CloudEvent {
  if (!isBinaryMode(message)) return toCloudEvent(parseJson(message.value, 'value'), 'structured', message.timestamp);
  const attributes = headerAttributes(message.headers);
  const contentType = header(message.headers, 'content-type');
  if (contentType !== undefined && !/^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    throw new InvalidMessage(`binary-mode data of content type ${contentType.slice(0, 100)} is not JSON`);
  }
  return toCloudEvent({ ...attributes, data: parseJson(message.value, 'binary-mode value (data)') }, 'binary', message.timestamp);
}

/** Whether the message's attributes are in `ce_*` headers (the binding's binary mode). */
export const isBinaryMode = (message: Pick<KafkaMessage, 'headers'>) => header(message.headers, 'ce_specversion') !== undefined;

/** A binary-mode event whose value another decoder turned into `data` (the Open edX event bus's Avro). */
export function cloudEventFromHeaders(message: Message, data: unknown, mode: CloudEvent['mode']): CloudEvent {
  return toCloudEvent({ ...headerAttributes(message.headers), data }, mode, message.timestamp);
}
