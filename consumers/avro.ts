import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import Cache from '@kafkajs/confluent-schema-registry/dist/cache';
import type { KafkaMessage } from 'kafkajs';
import { DependencyUnavailable } from '../src/errors';
import { type CloudEvent, cloudEventFromHeaders, decodeCloudEvent, InvalidMessage, isBinaryMode } from './cloudevents';

/**
 * The Open edX event bus (edx-event-bus-kafka): the envelope in `ce_*` headers, the value (the
 * event's `data`) in Avro, framed as the Confluent wire format (byte 0, a 4-byte big-endian
 * schema id, then Avro binary) and decoded with the writer's schema fetched from a
 * Confluent-compatible schema registry. The registry client and Avro are
 * @kafkajs/confluent-schema-registry's (with avsc); this module only chooses the path and says
 * what each failure means to the consumer.
 */

/** Byte 0 then a schema id: no JSON text starts with a zero byte, so the two paths cannot be confused. */
export const isConfluentFramed = (value: Buffer | null): value is Buffer => value !== null && value.length >= 5 && value[0] === 0;

export const schemaIdOf = (value: Buffer) => value.readInt32BE(1);

export interface SchemaRegistrySettings {
  url: string;
  username?: string;
  password?: string;
  /** Schemas kept, by id (least recently used dropped first). */
  cacheSize?: number;
  /** One registry request's limit. */
  timeoutMs?: number;
}

export interface AvroDecoder {
  /** The value's `data`: InvalidMessage for bytes that never decode, DependencyUnavailable while the registry cannot answer. */
  decode(value: Buffer): Promise<unknown>;
  /** For /readyz: the registry answers its API (cached for a moment, so probes stay cheap). */
  reachable(): Promise<boolean>;
}

const DEFAULT_CACHE_SIZE = 1000;
const DEFAULT_TIMEOUT_MS = 5000;
const PROBE_CACHE_MS = 2000;

type CacheEntry = NonNullable<ReturnType<Cache['getSchema']>>;

/**
 * The library's schema cache, bounded: its own keeps every schema it ever fetched. The library
 * calls getSchema before each fetch and setSchema after, through this public `cache` field.
 */
class BoundedSchemaCache extends Cache {
  constructor(max: number) {
    super();
    const byId = new Map<number, CacheEntry>();
    this.getSchema = (id) => {
      const entry = byId.get(id);
      if (entry) {
        byId.delete(id); // most recently used last: Map keeps insertion order
        byId.set(id, entry);
      }
      return entry;
    };
    this.setSchema = (id, type, schema) => {
      const entry = { type, schema };
      byId.delete(id);
      byId.set(id, entry);
      if (byId.size > max) byId.delete(byId.keys().next().value as number);
      return entry;
    };
    const clear = this.clear;
    this.clear = () => {
      clear();
      byId.clear();
    };
  }
}

/** The library's HTTP errors (mappersmith's, through its error middleware): a status, and a status of 400 for no answer at all. */
function httpStatus(err: unknown): number | undefined {
  if (!(err instanceof Error) || err.name !== 'ResponseError') return undefined;
  const { status } = err as Error & { status?: unknown };
  return typeof status === 'number' ? status : undefined;
}

export function createAvroDecoder(settings: SchemaRegistrySettings): AvroDecoder & { registry: SchemaRegistry } {
  const url = settings.url.replace(/\/+$/, '');
  const auth = settings.username !== undefined ? { username: settings.username, password: settings.password ?? '' } : undefined;
  const timeout = settings.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const registry = new SchemaRegistry({
    host: url,
    auth,
    clientId: 'course-access-groups',
    // The consumer retries with its own backoff and logs each try; the library's retries would hide them.
    retry: { retries: 0 },
    // mappersmith sets no request timeout: a registry that accepts connections but never
    // answers would hold the partition without a word.
    middlewares: [() => ({ prepareRequest: (next) => next().then((request) => request.enhance({ timeout })) })],
  });
  registry.cache = new BoundedSchemaCache(settings.cacheSize ?? DEFAULT_CACHE_SIZE);

  const headers: Record<string, string> = {};
  if (auth) headers.authorization = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  /** The registry answers its API: the root of the Confluent API is what SCHEMA_REGISTRY_URL names. */
  const answers = async () => {
    try {
      const res = await fetch(`${url}/schemas/types`, { headers, signal: AbortSignal.timeout(Math.min(timeout, 2000)) });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  };
  let probed = { at: 0, ok: false };

  return {
    registry,
    async decode(value) {
      const id = schemaIdOf(value);
      try {
        return await registry.decode(value);
      } catch (err) {
        const status = httpStatus(err);
        if (status === undefined) {
          // The schema was there and the bytes do not decode with it (truncated, trailing bytes,
          // a long beyond 2^53): they never will.
          throw new InvalidMessage(`Avro value of schema id ${id} does not decode: ${(err as Error).message}`.slice(0, 500));
        }
        // A 404 is an unknown id only from a registry that answers its API: a wrong
        // SCHEMA_REGISTRY_URL answers 404 to everything, and must not dead-letter every message.
        if (status === 404 && (await answers())) {
          throw new InvalidMessage(`Avro schema id ${id} is not known to the schema registry`);
        }
        throw new DependencyUnavailable('schema registry', err);
      }
    },
    async reachable() {
      if (Date.now() - probed.at < PROBE_CACHE_MS) return probed.ok;
      probed = { at: Date.now(), ok: await answers() };
      return probed.ok;
    },
  };
}

type Message = Pick<KafkaMessage, 'value' | 'headers' | 'timestamp'>;

/**
 * Decodes one message whatever its wire form: the Confluent frame means Avro through the
 * registry; anything else takes the JSON CloudEvents paths (consumers/cloudevents.ts), unchanged.
 */
export function createMessageDecoder(avro: AvroDecoder | null): (message: Message) => Promise<CloudEvent> {
  return async (message) => {
    if (!isConfluentFramed(message.value)) return decodeCloudEvent(message);
    if (!avro) throw new InvalidMessage('the value is Confluent-framed (Avro) and SCHEMA_REGISTRY_URL is not set');
    // Checked before the registry is asked: without its headers the event can never be read.
    if (!isBinaryMode(message)) throw new InvalidMessage('Avro value without the ce_* headers of its CloudEvent envelope');
    return cloudEventFromHeaders(message, await avro.decode(message.value), 'avro');
  };
}
