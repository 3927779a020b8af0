import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, type Admin, Kafka, logLevel, ResourcePatternTypes } from 'kafkajs';
import { COLLECTIONS, type MembershipDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import {
  cloudEvent,
  type EventTestService,
  expectEachActivationAppliedOnce,
  newUserId,
  orgWithRule,
  startEventService,
  structured,
  TYPES,
  untilBrokerKnows,
  userData,
  waitFor,
} from '../helpers/events';
import { client } from '../helpers/http';
import { privateKafka } from '../helpers/private-stack';
import { uniqueName } from '../helpers/stack';

/**
 * A consumer that kafkajs stops for good (its CRASH event) says so and comes back. The case is a
 * production one: the broker's ACLs stop allowing READ on the consumer group (an operator's
 * change, a rotated user). kafkajs's heartbeat then fails with GROUP_AUTHORIZATION_FAILED, which
 * it does not retry: `Runner.scheduleFetchManager`'s catch calls `onCrash`
 * (node_modules/kafkajs/src/consumer/runner.js), which disconnects the consumer and, the error
 * being non-retriable, never restarts it (src/consumer/index.js, `onCrash`); a join refused the
 * same way reaches `onCrash` from `Runner.start` without `run()` throwing. Before this, the pod
 * stayed ready, consuming nothing.
 *
 * A private broker of this file with ACLs on (scripts/stack.sh, STACK_KAFKA_ACLS=on), the service
 * on its SASL_SSL listener as a SCRAM user; the test grants and revokes through the PLAINTEXT
 * listener, whose principal is a super user.
 */
const ROOT = path.resolve(__dirname, '../..');
const TLS = path.join(ROOT, '.stack/tls');
const BASE = Number(process.env.CONSUMER_CRASH_TEST_PORT ?? 9660);
const PLAINTEXT = `127.0.0.1:${BASE}`;
const SASL_SSL = `127.0.0.1:${BASE + 2}`;
const USER = 'cagscram';
const PASSWORD = 'cagscram-secret';
const broker = privateKafka(BASE, BASE + 1, { STACK_KAFKA_SASL_SSL_PORT: String(BASE + 2), STACK_TLS_DIR: TLS, STACK_KAFKA_ACLS: 'on' });
const kafka = new Kafka({ clientId: 'consumer-crash-test', brokers: [PLAINTEXT], logLevel: logLevel.NOTHING });
const producer = kafka.producer({ allowAutoTopicCreation: true });
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

const allow = (
  resourceType: AclResourceTypes,
  resourceName: string,
  operation: AclOperationTypes,
  resourcePatternType = ResourcePatternTypes.LITERAL,
  user = USER,
) => ({
  resourceType,
  resourceName,
  resourcePatternType,
  principal: `User:${user}`,
  host: '*',
  operation,
  permissionType: AclPermissionTypes.ALLOW,
});

/** An organization with a rule, and activations of its learners sent on `topic` (retried until the broker knows the topic). */
async function learnersOf(service: Parameters<typeof orgWithRule>[0], topic: string) {
  const domain = `${uniqueName('d').replace(/_/g, '-')}.example`;
  const { org, group: accessGroup } = await orgWithRule(service, domain);
  const tenant = new Tenant(service.db, org);
  const activate = (id: number) =>
    untilBrokerKnows(() =>
      producer.send({ topic, acks: -1, messages: [structured(cloudEvent(TYPES.activated, userData(org, { id, email: `u${id}@${domain}` })), id)] }),
    );
  const member = (id: number) => tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ user: id });
  return { tenant, accessGroup, activate, member };
}

type Readyz = { status: number; body: { detail?: string; failing?: string[]; status?: string } };
const readyz = (baseUrl: string): Promise<Readyz> => client(baseUrl).get<Readyz['body']>('/readyz');

test('the broker stops allowing READ on the consumer group: /readyz 503 within seconds naming the group and the READ its ACLs lack, the consumer restarts with backoff, and once READ is allowed again it consumes and applies the event sent meanwhile, none lost', async () => {
  const group = uniqueName('g');
  const topic = uniqueName('activated');
  const groupRead = allow(AclResourceTypes.GROUP, group, AclOperationTypes.READ);
  await admin.createAcls({ acl: [allow(AclResourceTypes.TOPIC, topic, AclOperationTypes.ALL, ResourcePatternTypes.PREFIXED), groupRead] });
  await untilBrokerKnows(() => admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }));
  service = await startEventService({
    KAFKA_BROKERS: SASL_SSL,
    KAFKA_SSL: 'on',
    KAFKA_SSL_CA_FILE: `${TLS}/ca.pem`,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: USER,
    KAFKA_SASL_PASSWORD: PASSWORD,
    KAFKA_GROUP_ID: group,
    KAFKA_TOPICS: topic,
    LOG_LEVEL: 'info',
  });
  const { tenant, accessGroup, activate, member } = await learnersOf(service, topic);

  const before = newUserId();
  await activate(before);
  await waitFor(() => member(before));
  expect((await readyz(service.baseUrl)).status).toBe(200);

  // The operator takes READ on the group away.
  await admin.deleteAcls({ filters: [groupRead] });
  const revokedAt = Date.now();
  const refused = await waitFor(
    () => readyz(service!.baseUrl),
    (r) => r.status === 503,
    30000,
  );
  const noticedMs = Date.now() - revokedAt;
  expect(refused.body.failing).toEqual(['consumer']);
  // The heartbeat's refusal, or the next join's (kafkajs keeps no reason for that one: see
  // describeConsumerCrash); both name the group and what the ACLs lack.
  expect(refused.body.detail).toMatch(
    new RegExp(
      `consumer \\(Kafka (refused|gave no coordinator for) the consumer group ${group} .*the broker's ACLs must allow READ on group ${group} to KAFKA_SASL_USERNAME's user\\)`,
    ),
  );
  // The heartbeat (every 3 s with the default 30 s session) meets the refusal.
  expect(noticedMs).toBeLessThan(15000);

  // Sent while refused: not consumed, and the restarts (with backoff) do not make it ready.
  const meanwhile = newUserId();
  await activate(meanwhile);
  await waitFor(
    async () => service!.logs.filter((l) => l.includes('consumer not restarted yet; retrying')).length,
    (n) => n >= 2,
    30000,
  );
  expect(await member(meanwhile)).toBeNull();
  expect((await readyz(service.baseUrl)).status).toBe(503);

  // READ allowed again: the restart joins, consumes, and the event sent meanwhile is applied.
  await admin.createAcls({ acl: [groupRead] });
  const ready = await waitFor(
    () => readyz(service!.baseUrl),
    (r) => r.status === 200,
    45000,
  );
  expect(ready.body).toEqual({ status: 'ready' });
  await waitFor(() => member(meanwhile), Boolean, 30000);
  const after = newUserId();
  await activate(after);
  await waitFor(() => member(after), Boolean, 30000);
  await expectEachActivationAppliedOnce(tenant, [before, meanwhile, after], accessGroup.id);

  const logs = service.logs.join('\n');
  // One error line for the crash, naming what kafkajs met; the failed restarts are warnings.
  const crashes = service.logs.filter((l) => l.includes('consumer crashed; restarting it'));
  expect(crashes).toHaveLength(1);
  expect(crashes[0]).toContain(`Kafka refused the consumer group ${group} (GROUP_AUTHORIZATION_FAILED)`);
  expect(logs).not.toContain(PASSWORD);
}, 240000);

test('a SASL password rotated in KAFKA_SASL_PASSWORD_FILE is read again when the consumer restarts: after a crash it comes back with the new password, without a process restart', async () => {
  // cagrotated's password on the broker is cagrotated-secret (scripts/stack.sh).
  const user = 'cagrotated';
  const dir = mkdtempSync(path.join(tmpdir(), 'cag-rotated-'));
  const passwordFile = path.join(dir, 'password');
  writeFileSync(passwordFile, 'cagrotated-secret\n');
  const group = uniqueName('g');
  const topic = uniqueName('activated');
  const groupRead = allow(AclResourceTypes.GROUP, group, AclOperationTypes.READ, ResourcePatternTypes.LITERAL, user);
  await admin.createAcls({ acl: [allow(AclResourceTypes.TOPIC, topic, AclOperationTypes.ALL, ResourcePatternTypes.PREFIXED, user), groupRead] });
  await untilBrokerKnows(() => admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }));
  const rotated = await startEventService({
    KAFKA_BROKERS: SASL_SSL,
    KAFKA_SSL: 'on',
    KAFKA_SSL_CA_FILE: `${TLS}/ca.pem`,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: user,
    KAFKA_SASL_PASSWORD_FILE: passwordFile,
    KAFKA_GROUP_ID: group,
    KAFKA_TOPICS: topic,
    LOG_LEVEL: 'info',
  });
  try {
    const { activate, member } = await learnersOf(rotated, topic);
    const before = newUserId();
    await activate(before);
    await waitFor(() => member(before));

    // The operator rotates the password: on the broker (kafka-configs), then in the mounted file.
    // Connections already authenticated stay; any new one needs the new password.
    await broker.command('scram-user', user, 'cagrotated-next', 'SCRAM-SHA-512');
    writeFileSync(passwordFile, 'cagrotated-next\n');
    // A crash (READ on the group revoked, then granted again) makes the consumer connect anew.
    await admin.deleteAcls({ filters: [groupRead] });
    await waitFor(
      () => readyz(rotated.baseUrl),
      (r) => r.status === 503,
      30000,
    );
    const meanwhile = newUserId();
    await activate(meanwhile);
    await admin.createAcls({ acl: [groupRead] });
    const ready = await waitFor(
      () => readyz(rotated.baseUrl),
      (r) => r.status === 200,
      60000,
    );
    expect(ready.body).toEqual({ status: 'ready' });
    await waitFor(() => member(meanwhile), Boolean, 30000);
    const logs = rotated.logs.join('\n');
    expect(logs).not.toContain('cagrotated-next');
    expect(logs).not.toContain('cagrotated-secret');
  } finally {
    await rotated.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 240000);
