import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { createAvroDecoder } from '../../consumers/avro';
import { DependencyUnavailable } from '../../src/errors';
import { registryClientSettings } from '../../src/registry-settings';
import { SCHEMA_REGISTRY_URL, testConfig, uniqueName } from '../helpers/stack';

/**
 * The schema registry client on the same TLS and secret-file settings as Kafka's: a private CA
 * (SCHEMA_REGISTRY_CA_FILE, not NODE_EXTRA_CA_CERTS), a client certificate
 * (SCHEMA_REGISTRY_CERT_FILE/_KEY_FILE), the password in a file (SCHEMA_REGISTRY_PASSWORD_FILE),
 * each read again when it changes, with no new client. The local stack's registry (Apicurio)
 * behind an HTTPS front of this test, which requires a client certificate of its CA and basic
 * auth, as a managed registry's gateway does; the front's certificates and password change as a
 * renewal or a rotation changes them.
 */
let dir = '';
const file = (name: string) => path.join(dir, name);
const upstream = new URL(SCHEMA_REGISTRY_URL!);
let front: https.Server;
let frontUrl = '';
let password = 'first-password';
const seen = { unauthorized: 0, clientSubjects: [] as string[] };

/** A file replaced as Kubernetes replaces a mounted Secret's: a new file renamed over the old one. */
const replace = (name: string, content: string | Buffer) => {
  writeFileSync(file(`${name}.new`), content);
  renameSync(file(`${name}.new`), file(name));
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cag-registry-tls-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  for (const ca of ['ca1', 'ca2']) {
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${ca}`, '-keyout', `${ca}.key`, '-out', `${ca}.pem`);
    for (const [who, extra] of [
      ['server', 'subjectAltName=IP:127.0.0.1'],
      ['client', 'extendedKeyUsage=clientAuth'],
    ] as const) {
      openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${who}-of-${ca}`, '-keyout', `${who}-${ca}.key`, '-out', `${who}-${ca}.csr`);
      writeFileSync(file(`${who}-${ca}.ext`), `${extra}\n`);
      openssl(
        'x509',
        '-req',
        '-in',
        `${who}-${ca}.csr`,
        '-CA',
        `${ca}.pem`,
        '-CAkey',
        `${ca}.key`,
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        `${who}-${ca}.ext`,
        '-out',
        `${who}-${ca}.pem`,
      );
    }
  }
  // What the service is given: CA1's files, the first password.
  replace('ca.pem', readFileSync(file('ca1.pem')));
  replace('client.pem', readFileSync(file('client-ca1.pem')));
  replace('client.key', readFileSync(file('client-ca1.key')));
  replace('password', `${password}\n`);

  const context = (ca: string) => ({
    key: readFileSync(file(`server-${ca}.key`)),
    cert: readFileSync(file(`server-${ca}.pem`)),
    ca: readFileSync(file(`${ca}.pem`)),
  });
  front = https.createServer({ ...context('ca1'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    seen.clientSubjects.push((req.socket as TLSSocket).getPeerCertificate().subject?.CN?.toString() ?? '');
    if (req.headers.authorization !== `Basic ${Buffer.from(`cag:${password}`).toString('base64')}`) {
      seen.unauthorized++;
      res.writeHead(401).end('{"error_code":401,"message":"Unauthorized"}');
      return;
    }
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  (front as https.Server & { rotate?: (ca: string) => void }).rotate = (ca) => front.setSecureContext(context(ca));
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  frontUrl = `https://127.0.0.1:${(front.address() as AddressInfo).port}${upstream.pathname}`;
});
afterAll(async () => {
  await new Promise((resolve) => front?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A schema of its own (a new id), registered straight at the registry, and a value encoded with it. */
async function freshValue() {
  const direct = new SchemaRegistry({ host: SCHEMA_REGISTRY_URL! });
  const name = uniqueName('R');
  const schema = { type: 'record', name, namespace: 'cag.test', fields: [{ name: 'n', type: 'long' }] };
  const { id } = await direct.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: `cag-test-${name}` });
  return { id, value: await direct.encode(id, { n: id }) };
}

const settings = () =>
  registryClientSettings(
    testConfig({
      SCHEMA_REGISTRY_URL: frontUrl,
      SCHEMA_REGISTRY_CA_FILE: file('ca.pem'),
      SCHEMA_REGISTRY_CERT_FILE: file('client.pem'),
      SCHEMA_REGISTRY_KEY_FILE: file('client.key'),
      SCHEMA_REGISTRY_USERNAME: 'cag',
      SCHEMA_REGISTRY_PASSWORD_FILE: file('password'),
    }),
  )!;

test('over https with a private CA, a client certificate and a password file: the registry answers and values decode; a password rotated and a certificate renewed (a new CA) are read again at the next request, with the same client', async () => {
  const avro = createAvroDecoder(settings());
  expect(await avro.reachable()).toBe(true);
  const first = await freshValue();
  expect(await avro.decode(first.value)).toEqual({ n: first.id });
  expect(seen.clientSubjects.at(-1)).toBe('client-of-ca1');

  // The password changes on the registry first: refused (a dependency away, retried), never dead-lettered.
  password = 'second-password';
  const second = await freshValue();
  await expect(avro.decode(second.value)).rejects.toBeInstanceOf(DependencyUnavailable);
  expect(seen.unauthorized).toBe(1);
  // Then in the mounted file: the next request carries it.
  replace('password', 'second-password\n');
  expect(await avro.decode(second.value)).toEqual({ n: second.id });

  // The registry's certificate is renewed under a new CA, and it now takes client certificates of
  // that CA only; the files are replaced: the next connection uses them.
  (front as https.Server & { rotate: (ca: string) => void }).rotate('ca2');
  const third = await freshValue();
  await expect(avro.decode(third.value)).rejects.toBeInstanceOf(DependencyUnavailable);
  replace('ca.pem', readFileSync(file('ca2.pem')));
  replace('client.pem', readFileSync(file('client-ca2.pem')));
  replace('client.key', readFileSync(file('client-ca2.key')));
  expect(await avro.decode(third.value)).toEqual({ n: third.id });
  expect(seen.clientSubjects.at(-1)).toBe('client-of-ca2');
  // The probe behind /readyz (cached for 2 s) takes the same files.
  await new Promise((resolve) => setTimeout(resolve, 2100));
  expect(await avro.reachable()).toBe(true);
}, 60000);

test('without the private CA file the registry is not trusted (the system CAs alone): not reachable', async () => {
  const { tls: _tls, ...rest } = settings();
  const avro = createAvroDecoder(rest);
  expect(await avro.reachable()).toBe(false);
});
