import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Kafka, logLevel } from 'kafkajs';
import { MongoClient } from 'mongodb';
import { parse } from 'yaml';
import { COLLECTIONS, type MembershipDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { changeReader } from '../helpers/changes';
import {
  cloudEvent,
  type EventTestService,
  newUserId,
  orgWithRule,
  seedRule,
  startEventService,
  structured,
  TYPES,
  untilBrokerKnows,
  userData,
  waitFor,
} from '../helpers/events';
import { client } from '../helpers/http';
import { openedxPython, produceWithOpenedx } from '../helpers/openedx-producer';
import { privateDatabase, privateKafka } from '../helpers/private-stack';
import { killAll, type ServiceProcess, spawnService } from '../helpers/service-process';
import { SCHEMA_REGISTRY_URL, uniqueName } from '../helpers/stack';

/**
 * Kafka over TLS with SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), mutual TLS and MongoDB over TLS,
 * on a private broker and FerretDB of this file (scripts/stack.sh's secured listeners behind its
 * private CA, made once in .stack/tls): the service consumes, relays and dead-letters through
 * them, and a refused password, an untrusted CA or plaintext on the TLS port is one error line
 * naming the setting, readiness false, retries, no crash. The test's own clients use the broker's
 * PLAINTEXT listener: what is proved is the service's side. Last, the same SASL_SSL listener as an
 * operator's external Kafka for Tutor (docs/install-tutor.md's command, Tutor 21 and the plugin's
 * wheel): the service from the rendered environment and the LMS's producer from its rendered settings.
 */
const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const TLS = path.join(ROOT, '.stack/tls');
// Ports of this file's own servers (override when another run holds them).
const BASE = Number(process.env.KAFKA_SECURITY_TEST_PORT ?? 9480);
const MONGO_BASE = Number(process.env.KAFKA_SECURITY_TEST_MONGO_PORT ?? 27480);
const PLAINTEXT = `127.0.0.1:${BASE}`;
const SASL_SSL = `127.0.0.1:${BASE + 2}`;
const MUTUAL_TLS = `127.0.0.1:${BASE + 3}`;
const broker = privateKafka(BASE, BASE + 1, {
  STACK_KAFKA_SASL_SSL_PORT: String(BASE + 2),
  STACK_KAFKA_SSL_PORT: String(BASE + 3),
  STACK_TLS_DIR: TLS,
});
let database: Awaited<ReturnType<typeof privateDatabase>> | undefined;
const MONGO_PLAIN = `mongodb://127.0.0.1:${MONGO_BASE}/`;
const MONGO_TLS = `mongodb://127.0.0.1:${MONGO_BASE + 1}/?tls=true&tlsCAFile=${encodeURIComponent(`${TLS}/ca.pem`)}&tlsCertificateKeyFile=${encodeURIComponent(`${TLS}/client-bundle.pem`)}`;

const kafka = new Kafka({ clientId: 'kafka-security-test', brokers: [PLAINTEXT], logLevel: logLevel.NOTHING });
const producer = kafka.producer({ allowAutoTopicCreation: true });
const services: EventTestService[] = [];
const processes: ServiceProcess[] = [];
let otherCaDir = '';

beforeAll(async () => {
  otherCaDir = mkdtempSync(path.join(tmpdir(), 'cag-other-ca-'));
  await Promise.all([
    broker.start(),
    privateDatabase(MONGO_BASE, { STACK_MONGO_TLS_PORT: String(MONGO_BASE + 1), STACK_TLS_DIR: TLS }).then((d) => {
      database = d;
    }),
    // A CA the broker's certificate is not signed by.
    run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=another CA',
      '-keyout',
      `${otherCaDir}/ca.key`,
      '-out',
      `${otherCaDir}/ca.pem`,
    ]),
  ]);
  await producer.connect();
  // Made once here (about 20 s the first time, cached), not inside a test's timeout.
  process.env.OPENEDX_PRODUCER_PYTHON = openedxPython();
}, 240000);

afterAll(async () => {
  killAll(processes);
  for (const s of services) await s.close().catch(() => undefined);
  await producer.disconnect().catch(() => undefined);
  await broker.remove();
  await database?.remove();
  rmSync(otherCaDir, { recursive: true, force: true });
}, 120000);

const secured = (brokers: string, extra: Record<string, string>) => ({
  KAFKA_BROKERS: brokers,
  KAFKA_SSL: 'on',
  KAFKA_SSL_CA_FILE: `${TLS}/ca.pem`,
  ...extra,
});

/** How many messages `topic` holds, read through the PLAINTEXT listener. */
async function count(topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) return 0;
    // A dead-letter topic the service has just created may have no leader yet.
    return (await untilBrokerKnows(() => admin.fetchTopicOffsets(topic))).reduce((n, p) => n + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

/**
 * The service's three Kafka clients at work: an activation consumed and applied, its change
 * event relayed, and a message that is not an event dead-lettered.
 */
async function consumesRelaysAndDeadLetters(env: Record<string, string>) {
  const changes = uniqueName('changes');
  const reader = await changeReader(changes, PLAINTEXT);
  const service = await startEventService({ MONGO_URL: MONGO_PLAIN, CHANGES_TOPIC: changes, LOG_LEVEL: 'info', ...env });
  services.push(service);
  try {
    const domain = `${uniqueName('d').replace(/_/g, '-')}.example`;
    const { org, group } = await orgWithRule(service, domain);
    const [activations] = service.config.KAFKA_TOPICS;
    const id = newUserId();
    await untilBrokerKnows(() =>
      producer.send({
        topic: activations!,
        acks: -1,
        messages: [structured(cloudEvent(TYPES.activated, userData(org, { id, email: `u${id}@${domain}` })), id), { key: 'poison', value: 'not an event' }],
      }),
    );
    const membership = await waitFor(() => new Tenant(service.db, org).collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ user: id }));
    expect(membership).toMatchObject({ user: id, group: group.id, automatic: true });
    const relayed = await reader.find((e) => e.data.organization === org && e.subject.includes(String(id)));
    expect(relayed.event.data.organization).toBe(org);
    expect(
      await waitFor(
        () => count(`${activations}.dlq`),
        (n) => n === 1,
      ),
    ).toBe(1);
    expect((await client(service.baseUrl).get('/readyz')).status).toBe(200);
  } finally {
    await reader.close();
  }
  return service;
}

/** Runs the scenarios at once (their waits are the broker's and the consumers', not the CPU's), naming the one that failed. */
async function eachAtOnce(scenarios: Record<string, () => Promise<unknown>>): Promise<void> {
  const results = await Promise.allSettled(Object.values(scenarios).map((scenario) => scenario()));
  const failed = Object.keys(scenarios).flatMap((name, i) => {
    const r = results[i]!;
    return r.status === 'rejected' ? [`${name}: ${(r.reason as Error).stack ?? r.reason}`] : [];
  });
  if (failed.length > 0) throw new Error(failed.join('\n\n'));
}

test('over SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and over mutual TLS with MongoDB over TLS: activations consumed, change events relayed, a poison message dead-lettered', async () => {
  const sasl = (mechanism: string, username: string, password: string) =>
    secured(SASL_SSL, { KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: username, KAFKA_SASL_PASSWORD: password });
  await eachAtOnce({
    plain: () => consumesRelaysAndDeadLetters(sasl('plain', 'cagplain', 'cagplain-secret')),
    'scram-sha-256': () => consumesRelaysAndDeadLetters(sasl('scram-sha-256', 'cagscram', 'cagscram-secret')),
    // Kafka's own spelling of the mechanism is accepted too.
    'SCRAM-SHA-512': () => consumesRelaysAndDeadLetters(sasl('SCRAM-SHA-512', 'cagscram', 'cagscram-secret')),
    'mutual TLS and MongoDB over TLS (tls=true&tlsCAFile=...&tlsCertificateKeyFile=... in MONGO_URL)': () =>
      consumesRelaysAndDeadLetters({
        ...secured(MUTUAL_TLS, { KAFKA_SSL_CERT_FILE: `${TLS}/client.pem`, KAFKA_SSL_KEY_FILE: `${TLS}/client.key` }),
        MONGO_URL: MONGO_TLS,
      }),
  });
}, 120000);

type LogLine = { msg?: string; level?: number; setting?: string };
const lines = (p: ServiceProcess): LogLine[] =>
  p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
/** The process's /readyz answer; status 0 while it does not listen yet. */
const readyz = (port: number) =>
  client(`http://127.0.0.1:${port}`)
    .get<{ detail?: string; failing?: string[] }>('/readyz')
    .catch(() => ({ status: 0, body: {} as { detail?: string; failing?: string[] } }));

/**
 * A consumer process whose Kafka setting is wrong: it stays up, logs the reason once at error
 * level (later retries at debug), and /readyz names the setting and the broker.
 */
async function refusedOnce(port: number, env: Record<string, string>, reason: RegExp, setting: string) {
  const p = spawnService({
    SERVICE_ROLE: 'consumer',
    PORT: String(port),
    LOG_LEVEL: 'debug',
    MONGO_URL: MONGO_PLAIN,
    MONGO_DB: uniqueName('t'),
    KAFKA_TOPICS: uniqueName('activated'),
    KAFKA_GROUP_ID: uniqueName('g'),
    ...env,
  });
  processes.push(p);
  // Three tries: the reason was met again (after the backoff) and not logged again.
  try {
    await waitFor(
      async () => lines(p).filter((l) => l.msg === 'broker not reachable yet; retrying').length,
      (n) => n >= 2,
      90000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; exit code ${p.child.exitCode}; its output:\n${p.output().slice(-3000)}`);
  }
  const errors = lines(p).filter((l) => (l.level ?? 0) >= 50);
  expect(errors).toHaveLength(1);
  expect(errors[0]!.msg).toMatch(reason);
  expect(errors[0]).toMatchObject({ setting });
  expect(p.output()).not.toMatch(/\n\s+at /); // no stack trace
  const answer = await readyz(port);
  expect(answer.status).toBe(503);
  expect(answer.body.failing).toEqual(expect.arrayContaining(['broker', 'consumer']));
  expect(answer.body.detail).toMatch(reason);
  expect(p.child.exitCode).toBeNull();
  return p;
}

const HTTP_PORT = Number(process.env.KAFKA_SECURITY_TEST_HTTP_PORT ?? 18480);

test('a refused password, an untrusted CA, plaintext on the TLS port, no client certificate for mutual TLS: each one error line naming the setting and the broker, /readyz says it, retried without a crash; the refused password recovers once changed on the broker', async () => {
  const plain = { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'cagplain', KAFKA_SASL_PASSWORD: 'cagplain-secret' };
  let refusedPassword: ServiceProcess | undefined;
  const others: ServiceProcess[] = [];
  await eachAtOnce({
    'a refused SCRAM password': async () => {
      // cagrotated's password on the broker is cagrotated-secret (scripts/stack.sh).
      refusedPassword = await refusedOnce(
        HTTP_PORT,
        secured(SASL_SSL, { KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'cagrotated', KAFKA_SASL_PASSWORD: 'cagrotated-new' }),
        new RegExp(`Kafka broker ${SASL_SSL} refused the SASL credentials: check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD`),
        'KAFKA_SASL_PASSWORD',
      );
      expect(refusedPassword.output()).not.toContain('cagrotated-new');
    },
    'an untrusted CA': async () => {
      others.push(
        await refusedOnce(
          HTTP_PORT + 1,
          secured(SASL_SSL, { ...plain, KAFKA_SSL_CA_FILE: `${otherCaDir}/ca.pem` }),
          new RegExp(`Kafka broker ${SASL_SSL} presented a certificate this process does not trust: check KAFKA_SSL_CA_FILE`),
          'KAFKA_SSL_CA_FILE',
        ),
      );
    },
    'a plaintext client on the TLS port': async () => {
      others.push(
        await refusedOnce(
          HTTP_PORT + 2,
          { KAFKA_BROKERS: MUTUAL_TLS },
          new RegExp(`Kafka broker ${MUTUAL_TLS} closed the connection or did not answer: if it is a TLS listener, set KAFKA_SSL=on`),
          'KAFKA_SSL',
        ),
      );
    },
    'no client certificate on the mutual-TLS port': async () => {
      others.push(
        await refusedOnce(
          HTTP_PORT + 3,
          secured(MUTUAL_TLS, {}),
          new RegExp(`Kafka broker ${MUTUAL_TLS} refused the client certificate: check KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE`),
          'KAFKA_SSL_CERT_FILE',
        ),
      );
    },
  });
  // A stop while retrying is an orderly exit: nothing crashed.
  for (const p of others) p.child.kill('SIGTERM');
  for (const p of others) expect((await p.exited).code).toBe(0);

  // The operator sets the password on the broker (kafka-configs): the same process recovers.
  await broker.command('scram-user', 'cagrotated', 'cagrotated-new', 'SCRAM-SHA-512');
  const ready = await waitFor(
    () => readyz(HTTP_PORT),
    (r) => r.status === 200,
    60000,
  );
  expect(ready.body).toEqual({ status: 'ready' });
  expect(refusedPassword!.child.exitCode).toBeNull();
  refusedPassword!.child.kill('SIGTERM');
  expect((await refusedPassword!.exited).code).toBe(0);
}, 240000);

test('a bad Kafka security setting stops start-up with exit code 2 naming it', async () => {
  const p = spawnService({ KAFKA_SSL: 'on', KAFKA_SSL_CERT_FILE: `${TLS}/client.pem`, KAFKA_BROKERS: SASL_SSL });
  processes.push(p);
  expect((await p.exited).code).toBe(2);
  expect(p.output()).toContain('KAFKA_SSL_CERT_FILE: set without KAFKA_SSL_KEY_FILE');
}, 30000);

/**
 * An HTTPS front with the stack's server certificate (signed by its private CA): serves a JWKS
 * and passes everything else to the stack's schema registry.
 */
async function httpsFront(jwks: unknown) {
  const registry = new URL(SCHEMA_REGISTRY_URL);
  const server = https.createServer({ cert: readFileSync(`${TLS}/server.pem`), key: readFileSync(`${TLS}/server.key`) }, (req, res) => {
    if (req.url === '/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
      return;
    }
    const upstream = http.request(
      { host: registry.hostname, port: registry.port, path: req.url, method: req.method, headers: { ...req.headers, host: registry.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test('NODE_EXTRA_CA_CERTS: the schema registry and the JWKS URL over HTTPS behind the private CA are trusted, and so is Kafka TLS without KAFKA_SSL_CA_FILE', async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const front = await httpsFront({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] });
  try {
    const env = (port: number) => ({
      SERVICE_ROLE: 'all',
      PORT: String(port),
      MONGO_URL: MONGO_PLAIN,
      MONGO_DB: uniqueName('t'),
      KAFKA_TOPICS: uniqueName('activated'),
      KAFKA_GROUP_ID: uniqueName('g'),
      CHANGES_TOPIC: '',
      KAFKA_BROKERS: SASL_SSL,
      KAFKA_SSL: 'on',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'cagplain',
      KAFKA_SASL_PASSWORD: 'cagplain-secret',
      SCHEMA_REGISTRY_URL: `${front.origin}${new URL(SCHEMA_REGISTRY_URL).pathname}`,
      JWT_SECRET: '',
      JWT_JWKS_URL: `${front.origin}/jwks.json`,
    });
    const trusting = spawnService({ ...env(HTTP_PORT + 4), NODE_EXTRA_CA_CERTS: `${TLS}/ca.pem` });
    const without = spawnService(env(HTTP_PORT + 5));
    processes.push(trusting, without);
    const ready = await waitFor(
      () => readyz(HTTP_PORT + 4),
      (r) => r.status === 200,
      60000,
    );
    expect(ready.body).toEqual({ status: 'ready' });
    const jwt = await new SignJWT({ user_id: 7, org: uniqueName('tenant'), roles: ['site_admin'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(privateKey);
    expect((await client(`http://127.0.0.1:${HTTP_PORT + 4}`, jwt).get('course-access-groups/')).status).toBe(200);

    // The same process without the bundle trusts none of the three.
    const refused = await waitFor(
      () => readyz(HTTP_PORT + 5),
      (r) => (r.body.failing ?? []).includes('schema registry') && /KAFKA_SSL_CA_FILE/.test(r.body.detail ?? ''),
      60000,
    );
    expect(refused.status).toBe(503);
    expect(refused.body.failing).toEqual(expect.arrayContaining(['broker', 'schema registry']));
    expect((await client(`http://127.0.0.1:${HTTP_PORT + 5}`, jwt).get('course-access-groups/')).status).toBe(503);
  } finally {
    front.server.closeAllConnections();
    front.server.close();
  }
}, 150000);

test('the real Open edX producer (edx-event-bus-kafka with EVENT_BUS_KAFKA_API_KEY/_SECRET: SASL PLAIN over TLS) publishes a registration the service, over SASL_SSL, applies', async () => {
  const prefix = uniqueName('lms');
  const org = uniqueName('Org').replace(/_/g, '');
  const service = await startEventService({
    ...secured(SASL_SSL, { KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'cagscram', KAFKA_SASL_PASSWORD: 'cagscram-secret' }),
    MONGO_URL: MONGO_PLAIN,
    SCHEMA_REGISTRY_URL,
    DEFAULT_ORGANIZATION: org,
    KAFKA_TOPICS: `${prefix}-user-lifecycle`,
    LOG_LEVEL: 'info',
  });
  services.push(service);
  const domain = `${uniqueName('d').replace(/_/g, '-')}.example`;
  const group = await seedRule(new Tenant(service.db, org), domain);
  const id = newUserId();
  await produceWithOpenedx(
    prefix,
    [
      {
        signal: 'registration',
        time: new Date().toISOString(),
        user: { id, is_active: true, username: `learner${id}`, email: `learner${id}@${domain}`, name: 'Learner' },
      },
    ],
    // The broker's PLAIN user for the LMS; the CA as ssl.ca.location (the library has no setting for it).
    { bootstrap_servers: SASL_SSL, api_key: 'openedx', api_secret: 'openedx-secret', ssl_ca_location: `${TLS}/ca.pem` },
  );
  const membership = await waitFor(() => new Tenant(service.db, org).collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ user: id }), Boolean, 45000);
  expect(membership).toMatchObject({ user: id, group: group.id, automatic: true });
}, 120000);

/** A `tutor` command (Tutor 21, its test environment) with the Tutor plugin installed from its wheel into `site`, for the project `root`. */
function tutorCommand(python: string, site: string, root: string, bin: string) {
  mkdirSync(bin, { recursive: true });
  // The package has no __main__, and the environment's console script names the folder it was made in.
  const main = "import sys; from tutor.commands.cli import main; sys.argv[0] = 'tutor'; sys.exit(main())";
  writeFileSync(path.join(bin, 'tutor'), `#!/bin/sh\nexec ${JSON.stringify(python)} -c ${JSON.stringify(main)} "$@"\n`, { mode: 0o755 });
  return { ...process.env, PATH: `${bin}:${process.env.PATH}`, TUTOR_ROOT: root, TUTOR_PLUGINS_ROOT: path.join(root, 'plugins'), PYTHONPATH: site };
}

/** What docker compose gives a role of the rendered docker-compose.yml: its environment (`$$` is compose's `$`) and its bind mounts by target. */
function composeRole(root: string, role: string) {
  const local = path.join(root, 'env/local');
  const service = parse(readFileSync(path.join(local, 'docker-compose.yml'), 'utf8')).services[`course-access-groups-${role}`];
  const env = Object.fromEntries(Object.entries(service.environment as Record<string, string>).map(([k, v]) => [k, String(v).replaceAll('$$', '$')]));
  const mounts = Object.fromEntries(
    ((service.volumes ?? []) as string[]).map((v) => {
      const [source, target] = v.split(':');
      return [target!, path.resolve(local, source!)];
    }),
  );
  return { env, mounts };
}

/** docs/install-tutor.md's "An external Kafka" command, its example values replaced by this file's broker, CA, users and registry. */
function externalKafkaCommand(): string {
  const doc = readFileSync(path.join(ROOT, 'docs/install-tutor.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## An external Kafka'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  const values: [string, string][] = [
    ['kafka-1.example.org:9096', SASL_SSL],
    ['https://registry.example.org', SCHEMA_REGISTRY_URL],
    ['kafka-ca.pem', `${TLS}/ca.pem`],
    ['SERVICE_USER', 'cagscram'],
    ['SERVICE_PASSWORD', 'cagscram-secret'],
    ['LMS_USER', 'openedx'],
    ['LMS_PASSWORD', 'openedx-secret'],
  ];
  for (const [example] of values) expect(block).toContain(example);
  // The local registry asks for no credentials, and answers over http://, where the service
  // refuses to send them (basic auth in clear): the doc's registry key pair is left out here.
  const credentials = /^\s*--set COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_(USERNAME|PASSWORD)=.*\n/gm;
  expect(block.match(credentials)).toHaveLength(2);
  return values.reduce((text, [example, value]) => text.replaceAll(example, value), block.replace(credentials, ''));
}

test("docs/install-tutor.md's external SASL_SSL Kafka: the service started with the environment Tutor rendered becomes ready over SASL_SSL, and a registration the LMS publishes with its rendered settings reaches it", async () => {
  const work = mkdtempSync(path.join(tmpdir(), 'cag-tutor-kafka-'));
  try {
    const python = execFileSync('bash', [path.join(ROOT, 'scripts/tutor-plugin.sh'), '21'], { encoding: 'utf8' }).trim();
    // The release's wheel (RELEASE_DIR, as `npm test` sets it); else one built as the release builds it.
    const version = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;
    const wheel = process.env.RELEASE_DIR
      ? path.join(process.env.RELEASE_DIR, `tutor_contrib_course_access_groups-${version}-py3-none-any.whl`)
      : execFileSync('bash', [path.join(ROOT, 'scripts/tutor-plugin-wheel.sh'), python, path.join(work, 'wheel')], { encoding: 'utf8' }).trim();
    const site = path.join(work, 'site');
    await run(python, ['-m', 'pip', 'install', '--quiet', '--no-deps', '--no-index', '--target', site, wheel]);
    const root = path.join(work, 'tutor');
    const env = tutorCommand(python, site, root, path.join(work, 'bin'));
    const sh = (script: string) => run('sh', ['-e', '-c', script], { env, cwd: work, timeout: 180000 });
    const prefix = uniqueName('tutor').replace(/_/g, '-');
    const org = uniqueName('Org').replace(/_/g, '');
    await sh(
      `tutor plugins enable course-access-groups && tutor config save --set COURSE_ACCESS_GROUPS_ORGANIZATION=${org} --set COURSE_ACCESS_GROUPS_TOPIC_PREFIX=${prefix}`,
    );
    await sh(externalKafkaCommand());

    // Both roles as compose would start them: the rendered environment, the CA at the path its mount
    // names; only the database is this file's own (Tutor's MongoDB is not here).
    const db = uniqueName('tutor');
    const ports = { api: HTTP_PORT + 10, consumer: HTTP_PORT + 11 };
    const started: ServiceProcess[] = [];
    for (const role of ['api', 'consumer'] as const) {
      const { env, mounts } = composeRole(root, role);
      expect(env).toMatchObject({ KAFKA_BROKERS: SASL_SSL, KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'cagscram' });
      const ca = mounts[env.KAFKA_SSL_CA_FILE!];
      expect(readFileSync(ca!, 'utf8')).toBe(readFileSync(`${TLS}/ca.pem`, 'utf8'));
      started.push(spawnService({ ...env, KAFKA_SSL_CA_FILE: ca!, MONGO_URL: MONGO_PLAIN, MONGO_DB: db, PORT: String(ports[role]) }));
    }
    processes.push(...started);
    try {
      for (const port of Object.values(ports))
        await waitFor(
          () => readyz(port),
          (r) => r.status === 200,
          90000,
        );
    } catch (err) {
      throw new Error(`${(err as Error).message}; their output:\n${started.map((p) => p.output().slice(-2000)).join('\n')}`);
    }

    // The LMS: its rendered settings executed over the LMS plugin's settings code, and read by
    // edx-event-bus-kafka's own config reader (integrations/tutor/tests/lms_settings_probe.py).
    const production = readFileSync(path.join(root, 'env/apps/openedx/settings/lms/production.py'), 'utf8');
    const common = production.slice(production.indexOf('# edx-event-bus-redis settings'), production.indexOf('######## End of settings common to LMS and CMS'));
    const start = production.indexOf("# Course Access Groups: the LMS plugin's settings");
    const lms = production.slice(start, production.indexOf('\n}\n', start) + 3);
    const lmsPython = execFileSync('bash', [path.join(ROOT, 'scripts/openedx-plugin.sh'), '3.11'], { encoding: 'utf8' }).trim();
    const probe = await new Promise<string>((resolve, reject) => {
      const child = execFile(
        lmsPython,
        [path.join(ROOT, 'integrations/tutor/tests/lms_settings_probe.py')],
        { env: { ...process.env, PYTHONPATH: path.join(ROOT, 'integrations/openedx/src') } },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      );
      child.stdin!.end(JSON.stringify({ common, lms }));
    });
    const kafkaCommon = JSON.parse(probe).kafka_common as Record<string, string>;
    expect(kafkaCommon).toMatchObject({ 'bootstrap.servers': SASL_SSL, 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN' });

    const domain = `${uniqueName('d').replace(/_/g, '-')}.example`;
    const mongo = new MongoClient(MONGO_PLAIN);
    try {
      const tenant = new Tenant(mongo.db(db), org);
      const group = await seedRule(tenant, domain);
      const id = newUserId();
      await produceWithOpenedx(
        prefix,
        [
          {
            signal: 'registration',
            time: new Date().toISOString(),
            user: { id, is_active: true, username: `learner${id}`, email: `learner${id}@${domain}`, name: 'Learner' },
          },
        ],
        // The library has no CA setting: the CA as ssl.ca.location, as docs/kafka-security.md says an LMS behind a private CA needs.
        {
          bootstrap_servers: kafkaCommon['bootstrap.servers'],
          api_key: kafkaCommon['sasl.username'],
          api_secret: kafkaCommon['sasl.password'],
          ssl_ca_location: `${TLS}/ca.pem`,
        },
      );
      const membership = await waitFor(() => tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ user: id }), Boolean, 45000);
      expect(membership).toMatchObject({ user: id, group: group.id, automatic: true });
      await mongo.db(db).dropDatabase();
    } finally {
      await mongo.close();
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}, 300000);
