// docs/kafka-security.md: the Kafka TLS and SASL settings, checked at start-up with a message
// naming the setting (exit code 2 through src/main.ts), and the kafkajs options they make.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { describeConsumerCrash, describeKafkaFailure, kafkaSecurityOptions } from '../../src/kafka-security';

const base = { JWT_SECRET: 'a-secret-of-sixteen-chars' };
let dir = '';
const file = (name: string) => path.join(dir, name);

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cag-kafka-settings-'));
  // A CA, and a client certificate and key (openssl: Node makes keys, not certificates).
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=test CA', '-keyout', 'ca.key', '-out', 'ca.pem');
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=client', '-keyout', 'client.key', '-out', 'client.pem');
  writeFileSync(file('password'), 'from-a-file\n');
  writeFileSync(file('empty'), '');
  writeFileSync(file('not-pem'), 'hello');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('by default: plaintext, no SASL (kafkajs gets neither option)', () => {
  const c = loadConfig(base);
  expect(c.KAFKA_SSL).toBe('off');
  expect(kafkaSecurityOptions(c)).toEqual({});
});

test('TLS with the system CAs, with a CA file, and mutual TLS', () => {
  expect(kafkaSecurityOptions(loadConfig({ ...base, KAFKA_SSL: 'on' }))).toEqual({ ssl: true });
  const withCa = kafkaSecurityOptions(loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SSL_CA_FILE: file('ca.pem') }));
  expect(withCa.ssl).toEqual({ ca: [expect.stringContaining('BEGIN CERTIFICATE')] });
  const mutual = kafkaSecurityOptions(
    loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SSL_CERT_FILE: file('client.pem'), KAFKA_SSL_KEY_FILE: file('client.key') }),
  );
  expect(mutual.ssl).toEqual({ cert: expect.stringContaining('BEGIN CERTIFICATE'), key: expect.stringContaining('PRIVATE KEY') });
});

test('SASL: each mechanism (Kafka spelling accepted), the password or a file holding it (its newline dropped)', () => {
  for (const [given, mechanism] of [
    ['plain', 'plain'],
    ['PLAIN', 'plain'],
    ['scram-sha-256', 'scram-sha-256'],
    ['SCRAM-SHA-512', 'scram-sha-512'],
  ]) {
    const c = loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: given, KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' });
    expect(kafkaSecurityOptions(c).sasl).toEqual({ mechanism, username: 'u', password: 'p' });
  }
  const fromFile = loadConfig({
    ...base,
    KAFKA_SSL: 'on',
    KAFKA_SASL_MECHANISM: 'plain',
    KAFKA_SASL_USERNAME: 'u',
    KAFKA_SASL_PASSWORD_FILE: file('password'),
  });
  expect(kafkaSecurityOptions(fromFile).sasl).toEqual({ mechanism: 'plain', username: 'u', password: 'from-a-file' });
});

test.each([
  ['KAFKA_SSL is neither on nor off', { KAFKA_SSL: 'yes' }, /KAFKA_SSL: must be equal to one of the allowed values/],
  [
    'a CA file that cannot be read',
    { KAFKA_SSL: 'on', KAFKA_SSL_CA_FILE: '/nonexistent/ca.pem' },
    /KAFKA_SSL_CA_FILE: cannot read \/nonexistent\/ca.pem \(ENOENT\)/,
  ],
  ['a CA file that holds no certificate', { KAFKA_SSL: 'on', KAFKA_SSL_CA_FILE: 'not-pem' }, /KAFKA_SSL_CA_FILE: .*not-pem holds no PEM certificate/],
  ['a certificate without its key', { KAFKA_SSL: 'on', KAFKA_SSL_CERT_FILE: 'client.pem' }, /KAFKA_SSL_CERT_FILE: set without KAFKA_SSL_KEY_FILE/],
  ['a key without its certificate', { KAFKA_SSL: 'on', KAFKA_SSL_KEY_FILE: 'client.key' }, /KAFKA_SSL_KEY_FILE: set without KAFKA_SSL_CERT_FILE/],
  [
    "a key that is not the certificate's",
    { KAFKA_SSL: 'on', KAFKA_SSL_CERT_FILE: 'client.pem', KAFKA_SSL_KEY_FILE: 'ca.key' },
    /KAFKA_SSL_KEY_FILE: not the private key of the certificate/,
  ],
  [
    'a key file that holds no key',
    { KAFKA_SSL: 'on', KAFKA_SSL_CERT_FILE: 'client.pem', KAFKA_SSL_KEY_FILE: 'not-pem' },
    /KAFKA_SSL_KEY_FILE: .* holds no unencrypted PEM private key/,
  ],
  ['a CA file while KAFKA_SSL is off (no silent plaintext)', { KAFKA_SSL_CA_FILE: 'ca.pem' }, /KAFKA_SSL_CA_FILE: set, but KAFKA_SSL is off/],
  ['an unknown mechanism', { KAFKA_SASL_MECHANISM: 'gssapi' }, /KAFKA_SASL_MECHANISM: must be equal to one of the allowed values/],
  ['a mechanism without a user', { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_PASSWORD: 'p' }, /KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=plain/],
  [
    'a mechanism without a password',
    { KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'u' },
    /KAFKA_SASL_PASSWORD: required with KAFKA_SASL_MECHANISM=scram-sha-512/,
  ],
  [
    'a password and a password file',
    { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p', KAFKA_SASL_PASSWORD_FILE: 'password' },
    /set only one of the two/,
  ],
  [
    'a password file that cannot be read',
    { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD_FILE: '/nonexistent/pw' },
    /KAFKA_SASL_PASSWORD_FILE: cannot read \/nonexistent\/pw/,
  ],
  [
    'an empty password file',
    { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD_FILE: 'empty' },
    /KAFKA_SASL_PASSWORD_FILE: .*empty is empty/,
  ],
  [
    'credentials without a mechanism',
    { KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' },
    /KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD: set, but KAFKA_SASL_MECHANISM is not/,
  ],
  ['NODE_EXTRA_CA_CERTS that cannot be read', { NODE_EXTRA_CA_CERTS: '/nonexistent/bundle.pem' }, /NODE_EXTRA_CA_CERTS: cannot read \/nonexistent\/bundle.pem/],
  ['NODE_EXTRA_CA_CERTS that holds no certificate', { NODE_EXTRA_CA_CERTS: 'not-pem' }, /NODE_EXTRA_CA_CERTS: .*not-pem holds no PEM certificate/],
])('refused at start-up, naming the setting: %s', (_, env, message) => {
  // Relative names are files of the test's folder.
  const resolved = Object.fromEntries(
    Object.entries(env).map(([k, v]) => [
      k,
      /^(KAFKA_SSL_|KAFKA_SASL_PASSWORD_FILE|NODE_EXTRA)/.test(k) && !v.startsWith('/') && k !== 'KAFKA_SSL' ? file(v) : v,
    ]),
  );
  expect(() => loadConfig({ ...base, ...resolved })).toThrow(ConfigError);
  expect(() => loadConfig({ ...base, ...resolved })).toThrow(message);
});

test('a TLS file of MONGO_URL that cannot be read is refused at start-up (the driver would only find out when connecting)', () => {
  expect(() => loadConfig({ ...base, MONGO_URL: 'mongodb://db.example:27017/?tls=true&tlsCAFile=%2Fnonexistent%2Fca.pem' })).toThrow(
    /MONGO_URL: tlsCAFile \/nonexistent\/ca.pem cannot be read \(ENOENT\)/,
  );
  expect(() => loadConfig({ ...base, MONGO_URL: `mongodb://db.example:27017/?tls=true&tlsCAFile=${encodeURIComponent(file('ca.pem'))}` })).not.toThrow();
});

test('no message repeats a password', () => {
  let message = '';
  try {
    loadConfig({
      ...base,
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'hunter2-secret',
      KAFKA_SASL_PASSWORD_FILE: file('password'),
    });
  } catch (err) {
    message = (err as Error).message;
  }
  expect(message).toMatch(/KAFKA_SASL_PASSWORD/);
  expect(message).not.toContain('hunter2-secret');
});

describe('a refused connection in one line naming the setting and the broker', () => {
  const settings = { ...loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' }) };
  const named = (name: string, message: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(message), { name, ...extra });

  test('a refused password (kafkajs names the mechanism, never the password)', () => {
    const err = named(
      'KafkaJSSASLAuthenticationError',
      'SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512',
    );
    expect(describeKafkaFailure(err, settings)).toEqual({
      reason: expect.stringMatching(
        /^Kafka broker 127\.0\.0\.1:9092 refused the SASL credentials: check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD \(mechanism scram-sha-512\)/,
      ),
      setting: 'KAFKA_SASL_PASSWORD',
    });
  });

  test("an untrusted certificate, through kafkajs's wrapping, with the broker it names", () => {
    const inner = named('KafkaJSConnectionError', 'Connection error: self-signed certificate in certificate chain', {
      broker: 'b-1:9096',
      code: 'SELF_SIGNED_CERT_IN_CHAIN',
    });
    const err = named('KafkaJSNumberOfRetriesExceeded', inner.message, { originalError: inner });
    expect(describeKafkaFailure(err, settings)).toEqual({
      reason: expect.stringMatching(/^Kafka broker b-1:9096 presented a certificate this process does not trust: check KAFKA_SSL_CA_FILE/),
      setting: 'KAFKA_SSL_CA_FILE',
    });
  });

  test('a broker that is simply down names no setting (it is retried and logged as before)', () => {
    const err = named('KafkaJSConnectionError', 'Connection error: connect ECONNREFUSED 127.0.0.1:9092', { broker: '127.0.0.1:9092', code: 'ECONNREFUSED' });
    expect(describeKafkaFailure(err, settings)).toEqual({ reason: expect.stringMatching(/^Kafka broker 127\.0\.0\.1:9092 not reachable/), setting: null });
  });
});

describe("why the consumer crashed (kafkajs's CRASH), as /readyz says it", () => {
  const settings = {
    ...loadConfig({
      ...base,
      KAFKA_GROUP_ID: 'cag-prod',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'svc-user',
      KAFKA_SASL_PASSWORD: 'hunter2-secret',
    }),
  };
  /** As kafkajs reports it: its retrier wraps the broker's protocol error (src/retry/index.js). */
  const wrapped = (type: string, message: string) => {
    const protocol = Object.assign(new Error(message), { name: 'KafkaJSProtocolError', type, retriable: false });
    return Object.assign(new Error(message, { cause: protocol }), { name: 'KafkaJSNonRetriableError' });
  };

  test.each([
    [
      'GROUP_AUTHORIZATION_FAILED',
      wrapped('GROUP_AUTHORIZATION_FAILED', 'Not authorized to access group: Group authorization failed'),
      /^Kafka refused the consumer group cag-prod \(GROUP_AUTHORIZATION_FAILED\): the broker's ACLs must allow READ on group cag-prod to KAFKA_SASL_USERNAME's user$/,
    ],
    [
      'TOPIC_AUTHORIZATION_FAILED',
      wrapped('TOPIC_AUTHORIZATION_FAILED', 'Not authorized to access topics: [Topic authorization failed]'),
      /^Kafka refused reading KAFKA_TOPICS \(TOPIC_AUTHORIZATION_FAILED\): the broker's ACLs must allow READ and DESCRIBE on each topic/,
    ],
    [
      'no coordinator (kafkajs drops the reason)',
      Object.assign(new Error('Failed to find group coordinator'), { name: 'KafkaJSGroupCoordinatorNotFound' }),
      /^Kafka gave no coordinator for the consumer group cag-prod .*must allow READ on group cag-prod/,
    ],
    [
      'a refused password',
      Object.assign(new Error('SASL SCRAM SHA512 authentication failed: invalid credentials'), { name: 'KafkaJSSASLAuthenticationError' }),
      /refused the SASL credentials: check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD/,
    ],
    [
      'anything else: its name and message',
      wrapped('UNKNOWN_SERVER_ERROR', 'The server experienced an unexpected error'),
      /^the consumer stopped: KafkaJSNonRetriableError: The server experienced an unexpected error$/,
    ],
  ])('%s', (_name, err, reason) => {
    const said = describeConsumerCrash(err, settings);
    expect(said).toMatch(reason);
    expect(said).not.toMatch(/svc-user|hunter2-secret/);
  });
});

test('OAUTHBEARER: a token file, read again at each authentication; refused without it, with a user or password, or the file without the mechanism', async () => {
  writeFileSync(file('token'), 'first.token.\n');
  const c = loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: file('token') });
  const sasl = kafkaSecurityOptions(c).sasl as { mechanism: string; oauthBearerProvider: () => Promise<{ value: string }> };
  expect(sasl.mechanism).toBe('oauthbearer');
  expect(await sasl.oauthBearerProvider()).toEqual({ value: 'first.token.' });
  writeFileSync(file('token'), 'renewed.token.\n');
  expect(await sasl.oauthBearerProvider()).toEqual({ value: 'renewed.token.' });
  expect(() => loadConfig({ ...base, KAFKA_SASL_MECHANISM: 'oauthbearer' })).toThrow(
    /KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: required with KAFKA_SASL_MECHANISM=oauthbearer/,
  );
  expect(() =>
    loadConfig({ ...base, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: file('token'), KAFKA_SASL_USERNAME: 'u' }),
  ).toThrow(/KAFKA_SASL_USERNAME: not used with KAFKA_SASL_MECHANISM=oauthbearer/);
  expect(() => loadConfig({ ...base, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: file('empty') })).toThrow(/is empty/);
  expect(() => loadConfig({ ...base, KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: file('token') })).toThrow(/set, but KAFKA_SASL_MECHANISM is not/);
});

test("aws-msk-iam (MSK's IAM access control): a token signed by AWS's signer with the AWS SDK's credentials, for the region, at each authentication; refused without the region, without TLS, or with a password", async () => {
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  // The SDK's default chain starts with these variables: signing is local, nothing is asked of AWS.
  process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLEKEY';
  process.env.AWS_SECRET_ACCESS_KEY = 'example-secret';
  try {
    const c = loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'AWS-MSK-IAM', KAFKA_SASL_AWS_REGION: 'eu-west-1' });
    const sasl = kafkaSecurityOptions(c).sasl as { mechanism: string; oauthBearerProvider: () => Promise<{ value: string }> };
    expect(sasl.mechanism).toBe('oauthbearer');
    const signed = new URL(Buffer.from((await sasl.oauthBearerProvider()).value, 'base64url').toString());
    expect(signed.host).toBe('kafka.eu-west-1.amazonaws.com');
    expect(signed.searchParams.get('Action')).toBe('kafka-cluster:Connect');
    expect(signed.searchParams.get('X-Amz-Credential')).toMatch(/^AKIDEXAMPLEKEY\/\d{8}\/eu-west-1\/kafka-cluster\/aws4_request$/);
  } finally {
    process.env.AWS_ACCESS_KEY_ID = saved.id;
    process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
  }
  expect(() => loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'aws-msk-iam' })).toThrow(/KAFKA_SASL_AWS_REGION: required/);
  expect(() => loadConfig({ ...base, KAFKA_SASL_MECHANISM: 'aws-msk-iam', KAFKA_SASL_AWS_REGION: 'eu-west-1' })).toThrow(
    /KAFKA_SSL: MSK takes IAM only over TLS/,
  );
  expect(() =>
    loadConfig({ ...base, KAFKA_SSL: 'on', KAFKA_SASL_MECHANISM: 'aws-msk-iam', KAFKA_SASL_AWS_REGION: 'eu-west-1', KAFKA_SASL_USERNAME: 'u' }),
  ).toThrow(/KAFKA_SASL_USERNAME: not used with KAFKA_SASL_MECHANISM=aws-msk-iam/);
});
