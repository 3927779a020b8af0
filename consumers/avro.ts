import http from 'node:http';
import https from 'node:https';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import Cache from '@kafkajs/confluent-schema-registry/dist/cache';
import type { KafkaMessage } from 'kafkajs';
import { DependencyUnavailable } from '../src/errors';
import type { RegistryTls } from '../src/registry-settings';
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
  /** The password, or what gives the current one (a file read again when it changes: src/registry-settings.ts). */
  password?: string | (() => string);
  /** The PEM material of https connections as it is now (a CA, a client certificate and key): read at each request. */
  tls?: () => RegistryTls;
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

/**
 * An https agent whose CA and client certificate are those of `tls()` at each request: Node's
 * agent names its connections by them (https.Agent#getName), so a renewed file makes new
 * connections with the new material and no connection of the old one is reused.
 */
function refreshingAgent(tls: (() => RegistryTls) | undefined, timeout: number) {
  const agent = new https.Agent({ timeout });
  return {
    agent,
    refresh() {
      if (tls) Object.assign(agent.options, tls());
    },
  };
}

export function createAvroDecoder(settings: SchemaRegistrySettings): AvroDecoder & { registry: SchemaRegistry } {
  const url = settings.url.replace(/\/+$/, '');
  const timeout = settings.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const secure = url.startsWith('https://');
  const tls = refreshingAgent(settings.tls, timeout);
  const password = typeof settings.password === 'function' ? settings.password : () => (settings.password as string | undefined) ?? '';
  /** Basic auth as it is now (a rotated password file is read again): null without a user. */
  const authorization = () => (settings.username !== undefined ? `Basic ${Buffer.from(`${settings.username}:${password()}`).toString('base64')}` : null);
  const registry = new SchemaRegistry({
    host: url,
    clientId: 'course-access-groups',
    // Only for https: Node's http client refuses an https agent.
    ...(secure ? { agent: tls.agent } : {}),
    // The consumer retries with its own backoff and logs each try; the library's retries would hide them.
    retry: { retries: 0 },
    // mappersmith sets no request timeout: a registry that accepts connections but never
    // answers would hold the partition without a word. The credentials and TLS files are taken
    // as they are at each request (the library's own basic auth is fixed at construction).
    middlewares: [
      () => ({
        prepareRequest: (next) =>
          next().then((request) => {
            tls.refresh();
            const auth = authorization();
            return request.enhance({ timeout, ...(auth ? { headers: { authorization: auth } } : {}) });
          }),
      }),
    ],
  });
  registry.cache = new BoundedSchemaCache(settings.cacheSize ?? DEFAULT_CACHE_SIZE);

  /** The registry answers its API: the root of the Confluent API is what SCHEMA_REGISTRY_URL names. */
  const answers = (): Promise<boolean> =>
    new Promise((resolve) => {
      tls.refresh();
      const auth = authorization();
      const options = { headers: auth ? { authorization: auth } : {}, timeout: Math.min(timeout, 2000), ...(secure ? { agent: tls.agent } : {}) };
      const req = (secure ? https : http).get(`${url}/schemas/types`, options, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300));
        res.on('error', () => resolve(false));
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', () => resolve(false));
    });
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
