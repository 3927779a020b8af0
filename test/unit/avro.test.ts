// SPEC §5: the Open edX event bus's Avro beside JSON CloudEvents. The frame decides the path;
// a registry that cannot answer is a dependency failure (retried), an unknown schema id or bytes
// that do not decode are invalid messages (dead-lettered). The registry here is a small HTTP
// server answering as a Confluent-compatible registry does; test/integration/events-avro.test.ts
// and openedx-producer.test.ts run against the real Apicurio Registry.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { createAvroDecoder, createMessageDecoder, isConfluentFramed } from '../../consumers/avro';
import { InvalidMessage } from '../../consumers/cloudevents';
import { DependencyUnavailable } from '../../src/errors';
import { activationAvroSchema, eventBusHeaders } from '../helpers/avro';

const TYPE = 'org.openedx.learning.user.account.activated.v1';
const frame = (id: number, payload: Buffer) => {
  const head = Buffer.alloc(5);
  head.writeInt32BE(id, 1);
  return Buffer.concat([head, payload]);
};
const headersOf = (h: Record<string, string | Buffer | (string | Buffer)[] | undefined>) =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Buffer.from(String(v))]));

/** A registry that knows schema ids 1 to `known` (all the activation schema), counting requests by path. */
async function stubRegistry(opts: { known: number; api?: boolean }) {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const id = /^\/schemas\/ids\/(\d+)/.exec(req.url ?? '')?.[1];
    res.setHeader('content-type', 'application/vnd.schemaregistry.v1+json');
    if (opts.api !== false && req.url === '/schemas/types') return res.end('["JSON","PROTOBUF","AVRO"]');
    if (opts.api !== false && id !== undefined && Number(id) <= opts.known) return res.end(JSON.stringify({ schema: JSON.stringify(activationAvroSchema) }));
    res.statusCode = 404;
    // A wrong path gets a page that is not the API's error (no error_code).
    res.end(opts.api === false ? 'Not Found' : JSON.stringify({ message: `No content with id/hash 'contentId-${id}' was found.`, error_code: 40403 }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const data = (id: number) => ({ user: { id, is_active: true, pii: { username: `u${id}`, email: `u${id}@example.com`, name: 'U' } }, organization: 'org-a' });

/** Avro bytes of `value` in the activation schema (encoded by the library, not by hand). */
async function encode(url: string, value: object): Promise<Buffer> {
  const schema = await new SchemaRegistry({ host: url }).getSchema(1);
  return schema.toBuffer(value);
}

describe('the frame', () => {
  test.each([
    ['a structured-mode JSON value is not framed', Buffer.from('{"specversion":"1.0"}'), false],
    ['a binary-mode JSON value with leading whitespace is not framed', Buffer.from(' {"user":{}}'), false],
    ['an empty value is not framed', Buffer.alloc(0), false],
    ['no value is not framed', null, false],
    ['byte 0 without a whole schema id is not framed', Buffer.from([0, 0, 0, 1]), false],
    ['a value that starts with byte 1 is not framed', Buffer.from([1, 0, 0, 0, 1, 2]), false],
    ['byte 0, a schema id and a payload is framed', frame(7, Buffer.from([2, 4])), true],
    ['byte 0 and a schema id with an empty payload is framed', frame(7, Buffer.alloc(0)), true],
  ])('%s', (_name, value, framed) => {
    expect(isConfluentFramed(value)).toBe(framed);
  });

  test('JSON messages take the CloudEvents paths and never reach the registry', async () => {
    const avro = {
      decode: async () => {
        throw new Error('the registry was asked');
      },
      reachable: async () => true,
    };
    const decode = createMessageDecoder(avro);
    const envelope = { specversion: '1.0', id: 'e1', source: 's', type: TYPE, time: '2026-01-01T00:00:00Z', data: data(1) };
    const event = await decode({ value: Buffer.from(JSON.stringify(envelope)), headers: {}, timestamp: '0' });
    expect(event).toMatchObject({ id: 'e1', mode: 'structured', data: data(1) });
  });

  test('an Avro frame with no registry configured is an invalid message naming SCHEMA_REGISTRY_URL', async () => {
    const decode = createMessageDecoder(null);
    const message = { value: frame(1, Buffer.from([2])), headers: headersOf(eventBusHeaders(TYPE, 'e', '2026-01-01T00:00:00+00:00')), timestamp: '0' };
    await expect(decode(message)).rejects.toThrow(InvalidMessage);
    await expect(decode(message)).rejects.toThrow(/SCHEMA_REGISTRY_URL is not set/);
  });

  test('an Avro frame without the ce_* headers is invalid before the registry is asked', async () => {
    const registry = await stubRegistry({ known: 1 });
    try {
      const decode = createMessageDecoder(createAvroDecoder({ url: registry.url }));
      const message = { value: frame(1, await encode(registry.url, data(1))), headers: {}, timestamp: '0' };
      registry.requests.length = 0;
      await expect(decode(message)).rejects.toThrow(/without the ce_\* headers/);
      expect(registry.requests).toEqual([]);
    } finally {
      await registry.close();
    }
  });
});

describe('decoding through the registry', () => {
  test('the envelope comes from the headers, data from the Avro value; a long arrives as a number; the schema is fetched once', async () => {
    const registry = await stubRegistry({ known: 1 });
    try {
      const value = frame(1, await encode(registry.url, data(12345678901)));
      const decode = createMessageDecoder(createAvroDecoder({ url: registry.url }));
      const headers = headersOf(eventBusHeaders(TYPE, 'evt-9', '2026-03-01T10:00:00.123456+00:00'));
      registry.requests.length = 0;
      for (let i = 0; i < 5; i++) {
        const event = await decode({ value, headers, timestamp: '0' });
        expect(event).toMatchObject({ id: 'evt-9', type: TYPE, source: 'openedx/lms/web', mode: 'avro', datacontenttype: 'application/avro' });
        expect(event.eventTime).toBe('2026-03-01T10:00:00.123456000Z');
        expect(JSON.parse(JSON.stringify(event.data))).toEqual(data(12345678901));
        expect(typeof (event.data as ReturnType<typeof data>).user.id).toBe('number');
      }
      expect(registry.requests).toEqual(['/schemas/ids/1']);
    } finally {
      await registry.close();
    }
  });

  test('the schema cache is bounded: past its size the least recently used schema is fetched again', async () => {
    const registry = await stubRegistry({ known: 3 });
    try {
      const payload = await encode(registry.url, data(1));
      const avro = createAvroDecoder({ url: registry.url, cacheSize: 2 });
      registry.requests.length = 0;
      for (const id of [1, 2, 1, 3, 1, 2]) await avro.decode(frame(id, payload));
      // 1 and 2 fetched; 1 used again; 3 evicts 2 (least recent); 1 is still there; 2 again.
      expect(registry.requests).toEqual(['/schemas/ids/1', '/schemas/ids/2', '/schemas/ids/3', '/schemas/ids/2']);
    } finally {
      await registry.close();
    }
  });

  test('a schema id the registry does not know is an invalid message (dead-lettered) with the id in its reason', async () => {
    const registry = await stubRegistry({ known: 1 });
    try {
      const avro = createAvroDecoder({ url: registry.url });
      const err = await avro.decode(frame(424242, Buffer.from([2]))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidMessage);
      expect((err as Error).message).toBe('Avro schema id 424242 is not known to the schema registry');
    } finally {
      await registry.close();
    }
  });

  test.each([
    ['truncated', (b: Buffer) => b.subarray(0, b.length - 3)],
    ['with trailing bytes', (b: Buffer) => Buffer.concat([b, Buffer.from([1, 2, 3])])],
  ])('bytes that do not decode with their schema (%s) are an invalid message', async (_name, spoil) => {
    const registry = await stubRegistry({ known: 1 });
    try {
      const avro = createAvroDecoder({ url: registry.url });
      const err = await avro.decode(frame(1, spoil(await encode(registry.url, data(5))))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidMessage);
      expect((err as Error).message).toMatch(/^Avro value of schema id 1 does not decode: /);
    } finally {
      await registry.close();
    }
  });

  test('a registry that cannot be reached is a dependency failure (retried until it answers), never an invalid message', async () => {
    const registry = await stubRegistry({ known: 1 });
    const payload = await encode(registry.url, data(1));
    await registry.close(); // nothing listens on its port any more
    const avro = createAvroDecoder({ url: registry.url, timeoutMs: 1000 });
    const err = await avro.decode(frame(1, payload)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DependencyUnavailable);
    expect(err).not.toBeInstanceOf(InvalidMessage);
    expect(err).toMatchObject({ retriable: true, dependency: 'schema registry' });
    expect(await avro.reachable()).toBe(false);
  });

  test('a registry that accepts the connection and never answers is a dependency failure after the request timeout', async () => {
    const silent = createServer(() => undefined); // reads the request, answers nothing
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const avro = createAvroDecoder({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 300 });
      const started = Date.now();
      await expect(avro.decode(frame(1, Buffer.from([2])))).rejects.toThrow(DependencyUnavailable);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });

  test('a 404 from a URL that is not the registry API (a wrong SCHEMA_REGISTRY_URL) is a dependency failure, not a dead letter', async () => {
    const wrong = await stubRegistry({ known: 1, api: false });
    try {
      const avro = createAvroDecoder({ url: wrong.url });
      await expect(avro.decode(frame(1, Buffer.from([2])))).rejects.toThrow(DependencyUnavailable);
      expect(await avro.reachable()).toBe(false);
    } finally {
      await wrong.close();
    }
  });
});
