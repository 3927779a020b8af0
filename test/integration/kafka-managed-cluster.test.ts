import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, type Admin, Kafka, logLevel, ResourcePatternTypes } from 'kafkajs';
import { runCli } from '../../src/cli/main';
import { loadKafkaCliConfig } from '../../src/config';
import { type NeededAcl, neededAcls } from '../../src/kafka-topics';
import { type EventTestService, orgWithRule, startEventService, untilBrokerKnows, waitFor } from '../helpers/events';
import { client } from '../helpers/http';
import { privateKafka } from '../helpers/private-stack';
import { uniqueName } from '../helpers/stack';

/**
 * A cluster set up as Confluent Cloud, MSK or an OIDC-secured Kafka are: it creates nothing by
 * itself and authorizes with ACLs. `cag topics`: what it prints is what the service needs, and
 * all it needs. OAUTHBEARER: a token from a file its issuer renews, read at each authentication.
 * A private broker with ACLs on (scripts/stack.sh, STACK_KAFKA_ACLS=on); the service and `cag` on
 * its SASL_SSL listener as the PLAIN user cagplain, or with an OAUTHBEARER token (the listener's
 * validator is Kafka's unsecured one: an unsigned token's `sub` is the principal); the test
 * grants through the PLAINTEXT listener, whose principal is a super user.
 */
const ROOT = path.resolve(__dirname, '../..');
const TLS = path.join(ROOT, '.stack/tls');
const BASE = Number(process.env.KAFKA_MANAGED_TEST_PORT ?? 9700);
const PLAINTEXT = `127.0.0.1:${BASE}`;
const SASL_SSL = `127.0.0.1:${BASE + 2}`;
const USER = 'cagplain';
const broker = privateKafka(BASE, BASE + 1, { STACK_KAFKA_SASL_SSL_PORT: String(BASE + 2), STACK_TLS_DIR: TLS, STACK_KAFKA_ACLS: 'on' });
const kafka = new Kafka({ clientId: 'kafka-topics-test', brokers: [PLAINTEXT], logLevel: logLevel.NOTHING });
const producer = kafka.producer({ allowAutoTopicCreation: false });
let admin: Admin;
let service: EventTestService | undefined;

beforeAll(async () => {
  await broker.start();
  admin = kafka.admin();
  await Promise.all([admin.connect(), producer.connect()]);
}, 180000);

afterAll(async () => {
  await service?.close().catch(() => undefined);
  await Promise.allSettled([admin?.disconnect(), producer.disconnect()]);
  await broker.remove();
}, 60000);

const group = uniqueName('g');
const [activated, lifecycle] = [uniqueName('activated'), uniqueName('lifecycle')];
const prefix = `cag.${uniqueName('ns')}.rel.`;
const changes = `cag.${uniqueName('ns')}.rel.changes`;
const env = {
  KAFKA_BROKERS: SASL_SSL,
  KAFKA_SSL: 'on',
  KAFKA_SSL_CA_FILE: `${TLS}/ca.pem`,
  KAFKA_SASL_MECHANISM: 'plain',
  KAFKA_SASL_USERNAME: USER,
  KAFKA_SASL_PASSWORD: 'cagplain-secret',
  KAFKA_GROUP_ID: group,
  KAFKA_TOPICS: `${activated},${lifecycle}`,
  KAFKA_DLQ_PREFIX: prefix,
  CHANGES_TOPIC: changes,
  LOG_LEVEL: 'silent',
};

async function cag(...argv: string[]) {
  const out = { stdout: '', stderr: '' };
  const stream = (key: 'stdout' | 'stderr') => {
    const s = new PassThrough();
    s.on('data', (chunk) => (out[key] += String(chunk)));
    return s;
  };
  const code = await runCli(argv, { stdout: stream('stdout'), stderr: stream('stderr'), env });
  return { code, ...out };
}

/** The plan's ACLs as the broker takes them (the test's admin is a super user). */
const asBrokerAcl = (a: NeededAcl, user = USER) => ({
  resourceType: { Group: AclResourceTypes.GROUP, Topic: AclResourceTypes.TOPIC, Cluster: AclResourceTypes.CLUSTER }[a.resource],
  resourceName: a.name,
  resourcePatternType: ResourcePatternTypes.LITERAL,
  principal: `User:${user}`,
  host: '*',
  operation: {
    Read: AclOperationTypes.READ,
    Write: AclOperationTypes.WRITE,
    Describe: AclOperationTypes.DESCRIBE,
    Create: AclOperationTypes.CREATE,
    IdempotentWrite: AclOperationTypes.IDEMPOTENT_WRITE,
  }[a.operation],
  permissionType: AclPermissionTypes.ALLOW,
});

/**
 * How many messages a topic holds. A topic just created (by the service, or auto-created) may
 * have no leader for a moment: the broker answers "not the leader", which kafkajs calls
 * retriable; asked again until it has one.
 */
async function messagesIn(topic: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    try {
      return (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0);
    } catch (err) {
      if (attempt >= 40 || !(err as { retriable?: boolean }).retriable) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

test('`cag topics` prints every topic (consumed, each dead-letter topic under KAFKA_DLQ_PREFIX, the changes topic) and the ACLs of the SASL user, as kafka-acls.sh commands', async () => {
  const { code, stdout } = await cag('topics');
  expect(code).toBe(0);
  for (const topic of [activated, lifecycle, `${prefix}${activated}.dlq`, `${prefix}${lifecycle}.dlq`, changes]) {
    expect(stdout).toMatch(new RegExp(`^  ${topic.replace(/\./g, '\\.')} +(read|write) `, 'm'));
  }
  expect(stdout).toContain(`ACLs for User:${USER}:`);
  const command = (rest: string) => `kafka-acls.sh --bootstrap-server ${SASL_SSL} --add --allow-principal User:${USER} ${rest}`;
  expect(stdout).toContain(command(`--operation Read --group ${group}`));
  expect(stdout).toContain(command(`--operation Read --topic ${activated}`));
  expect(stdout).toContain(command(`--operation Write --topic ${prefix}${activated}.dlq`));
  expect(stdout).toContain(command(`--operation Write --topic ${changes}`));
  expect(stdout).toContain(`${command('--operation IdempotentWrite --cluster')}   # brokers older than Kafka 2.8 only`);
});

test("`cag topics --create` without Create: exit 1, each topic named as refused; with the plan's ACLs: every topic created, and a second run finds them all", async () => {
  const refused = await cag('topics', '--create');
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(`${prefix}${activated}.dlq: not created: TOPIC_AUTHORIZATION_FAILED`);
  expect(refused.stderr).toContain('5 topic(s) not created');
  expect(await admin.listTopics()).not.toContain(changes);

  await admin.createAcls({ acl: neededAcls(loadKafkaCliConfig(env)).map((a) => asBrokerAcl(a)) });
  // ACLs reach the broker's authorizer a moment after they are added: a run may create some only.
  let said = '';
  await waitFor(
    async () => {
      const run = await cag('topics', '--create', '--partitions', '2');
      said += run.stderr;
      return run;
    },
    (r) => r.code === 0,
    30000,
  );
  for (const t of [activated, lifecycle, `${prefix}${activated}.dlq`, `${prefix}${lifecycle}.dlq`, changes]) expect(said).toContain(`${t}: created`);
  const listed = await admin.fetchTopicMetadata({ topics: [changes, `${prefix}${lifecycle}.dlq`] });
  expect(listed.topics.map((t) => t.partitions.length)).toEqual([2, 2]);
  const again = await cag('topics', '--create');
  expect(again.code).toBe(0);
  expect(again.stderr.trim().split('\n')).toEqual(
    [activated, lifecycle, `${prefix}${activated}.dlq`, `${prefix}${lifecycle}.dlq`, changes].map((t) => `${t}: exists`),
  );
}, 90000);

test('the ACLs the plan always needs are enough (no Create, no IdempotentWrite on a 3.9 broker): the service consumes, dead-letters to <KAFKA_DLQ_PREFIX><topic>.dlq and publishes change events', async () => {
  // The previous test's Create and IdempotentWrite are taken away: only what is always needed stays.
  await admin.deleteAcls({
    filters: neededAcls(loadKafkaCliConfig(env))
      .filter((a) => a.when !== null)
      .map((a) => asBrokerAcl(a)),
  });
  service = await startEventService({ ...env, LOG_LEVEL: 'info' });
  const readyz = await waitFor(
    () => client(service!.baseUrl).get('/readyz'),
    (r) => r.status === 200,
    30000,
  );
  expect(readyz.status).toBe(200);
  await untilBrokerKnows(() => producer.send({ topic: activated, acks: -1, messages: [{ value: 'not a CloudEvent' }] }));
  await waitFor(
    () => messagesIn(`${prefix}${activated}.dlq`),
    (n) => n === 1,
    30000,
  );
  // A group made through the API: a change event on the changes topic, through the idempotent producer.
  await orgWithRule(service, `${uniqueName('d').replace(/_/g, '-')}.example`);
  await waitFor(
    () => messagesIn(changes),
    (n) => n > 0,
    30000,
  );
  expect(service.logs.join('\n')).not.toMatch(/AUTHORIZATION_FAILED/);
  // Nothing was auto-created meanwhile (it could not be: no Create).
  expect((await admin.listTopics()).filter((t) => t.includes(prefix) || t === changes).sort()).toEqual(
    [`${prefix}${activated}.dlq`, `${prefix}${lifecycle}.dlq`, changes].sort(),
  );
}, 120000);

/** An unsigned JWT as Kafka's unsecured OAUTHBEARER validator takes it: `sub` is the principal. */
const unsignedToken = (sub: string, expiresInS: number) => {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return `${part({ alg: 'none' })}.${part({ sub, iat: now - 60, exp: now + expiresInS })}.`;
};

test('OAUTHBEARER with the token in a file: an expired token is refused (not ready, naming KAFKA_SASL_OAUTHBEARER_TOKEN_FILE, never the token); the file renewed, the service connects and consumes without a restart', async () => {
  const subject = 'cagoauth';
  const oauthGroup = uniqueName('g');
  const topic = uniqueName('activated');
  const dir = mkdtempSync(path.join(tmpdir(), 'cag-oauth-'));
  const tokenFile = path.join(dir, 'token');
  const expired = unsignedToken(subject, -600);
  writeFileSync(tokenFile, `${expired}\n`);
  const plan = neededAcls(loadKafkaCliConfig({ ...env, KAFKA_GROUP_ID: oauthGroup, KAFKA_TOPICS: topic, CHANGES_TOPIC: '' }));
  await admin.createAcls({ acl: plan.map((a) => asBrokerAcl(a, subject)) });
  await untilBrokerKnows(() => admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }));
  const oauth = await startEventService(
    {
      ...env,
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_USERNAME: undefined,
      KAFKA_SASL_PASSWORD: undefined,
      KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: tokenFile,
      KAFKA_GROUP_ID: oauthGroup,
      KAFKA_TOPICS: topic,
      CHANGES_TOPIC: '',
      LOG_LEVEL: 'info',
    },
    { waitReady: false },
  );
  try {
    const refused = await waitFor(
      () => client(oauth.baseUrl).get<{ detail?: string }>('/readyz'),
      (r) => r.status === 503 && /OAUTHBEARER token/.test(r.body.detail ?? ''),
      30000,
    );
    expect(refused.body.detail).toMatch(/closed the connection after the OAUTHBEARER token .*check the token in KAFKA_SASL_OAUTHBEARER_TOKEN_FILE/);

    // Its issuer renews the token (a new file renamed over the old, as a mounted Secret changes).
    writeFileSync(`${tokenFile}.new`, unsignedToken(subject, 3600));
    renameSync(`${tokenFile}.new`, tokenFile);
    await oauth.ready;
    const ready = await waitFor(
      () => client(oauth.baseUrl).get('/readyz'),
      (r) => r.status === 200,
      30000,
    );
    expect(ready.status).toBe(200);
    await untilBrokerKnows(() => producer.send({ topic, acks: -1, messages: [{ value: 'not a CloudEvent' }] }));
    await waitFor(
      () => messagesIn(`${prefix}${topic}.dlq`),
      (n) => n === 1,
      30000,
    );
    expect(oauth.logs.join('\n')).not.toContain(expired.split('.')[1]!);
  } finally {
    await oauth.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 120000);
