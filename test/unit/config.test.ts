// docs/operations.md: a missing or invalid setting stops start-up with a message naming it.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, jwtAlgorithm, loadConfig } from '../../src/config';

const base = { JWT_SECRET: 'a-secret-of-sixteen-chars' };

test('defaults follow the SPEC', () => {
  const c = loadConfig(base);
  expect(c.PORT).toBe(8000);
  expect(c.KAFKA_GROUP_ID).toBe('course-access-groups');
  expect(c.KAFKA_TOPICS).toEqual(['user-account-activated', 'user-lifecycle', 'course-catalog']);
  expect(c.SERVICE_ROLE).toBe('all');
  expect(c.EVENT_MAX_ATTEMPTS).toBe(10);
  expect(c.EVENT_BATCH_SIZE).toBe(500);
  expect(loadConfig({ ...base, EVENT_MAX_ATTEMPTS: '3' }).EVENT_MAX_ATTEMPTS).toBe(3);
  expect(Object.isFrozen(c)).toBe(true);
});

test('change events go to course-access-groups.changes unless CHANGES_TOPIC is set; set empty, they are off; audit on, 365 days', () => {
  const c = loadConfig(base);
  expect([c.CHANGES_TOPIC, c.AUDIT_LOG, c.AUDIT_RETENTION_DAYS]).toEqual(['course-access-groups.changes', 'on', 365]);
  expect(loadConfig({ ...base, CHANGES_TOPIC: '' }).CHANGES_TOPIC).toBe('');
  expect(loadConfig({ ...base, CHANGES_TOPIC: 'lms.changes' }).CHANGES_TOPIC).toBe('lms.changes');
  expect(loadConfig({ ...base, AUDIT_RETENTION_DAYS: '30' }).AUDIT_RETENTION_DAYS).toBe(30);
});

test("the consumer's session timeout is kafkajs's 30 s and the relay's lease 15 s unless set; the bounds themselves pass", () => {
  const c = loadConfig(base);
  expect([c.KAFKA_SESSION_TIMEOUT_MS, c.CHANGE_RELAY_LEASE_MS]).toEqual([30000, 15000]);
  const low = loadConfig({ ...base, KAFKA_SESSION_TIMEOUT_MS: '6000', CHANGE_RELAY_LEASE_MS: '3000' });
  expect([low.KAFKA_SESSION_TIMEOUT_MS, low.CHANGE_RELAY_LEASE_MS]).toEqual([6000, 3000]);
  const high = loadConfig({ ...base, KAFKA_SESSION_TIMEOUT_MS: '1800000', CHANGE_RELAY_LEASE_MS: '600000' });
  expect([high.KAFKA_SESSION_TIMEOUT_MS, high.CHANGE_RELAY_LEASE_MS]).toEqual([1800000, 600000]);
});

test('no JWT key at all is refused, naming the three settings', () => {
  expect(() => loadConfig({})).toThrow(ConfigError);
  expect(() => loadConfig({})).toThrow(/JWT_SECRET.*JWT_PUBLIC_KEY.*JWT_JWKS_URL/);
});

test.each([
  ['PORT', 'eighty'],
  ['PORT', '70000'],
  ['SERVICE_ROLE', 'worker'],
  ['MONGO_URL', 'postgres://x'],
  ['KAFKA_TOPICS', 'a,,b'],
  ['LOG_LEVEL', 'loud'],
  ['CHANGES_TOPIC', 'two words'],
  ['AUDIT_LOG', 'maybe'],
  ['AUDIT_RETENTION_DAYS', '0'],
  ['AUDIT_RETENTION_DAYS', 'a year'],
  ['EVENT_MAX_ATTEMPTS', '0'],
  ['EVENT_MAX_ATTEMPTS', 'ten'],
  ['EVENT_BATCH_SIZE', '0'],
  ['EVENT_BATCH_SIZE', '5001'],
  ['KAFKA_SESSION_TIMEOUT_MS', '5999'],
  ['KAFKA_SESSION_TIMEOUT_MS', '1800001'],
  ['KAFKA_SESSION_TIMEOUT_MS', '30s'],
  ['CHANGE_RELAY_LEASE_MS', '2999'],
  ['CHANGE_RELAY_LEASE_MS', '600001'],
  ['CHANGE_RELAY_LEASE_MS', '1.5'],
  ['SCHEMA_REGISTRY_URL', 'registry:8081'],
])('an invalid %s (%s) is refused by name', (key, value) => {
  expect(() => loadConfig({ ...base, [key]: value })).toThrow(new RegExp(key));
});

describe('URL settings are parsed at start-up as the code that uses them parses them', () => {
  test.each([
    ['MONGO_URL', 'mongodb://', /MONGO_URL: Protocol and host list are required/],
    ['MONGO_URL', 'mongodb://db:99999/', /MONGO_URL: /],
    ['MONGO_URL', 'mongodb://db/?maxPoolSize=many', /MONGO_URL: .*maxPoolSize/],
    ['MONGO_URL', 'mongodb://db/?noSuchOption=1', /MONGO_URL: .*not supported/],
    ['KAFKA_BROKERS', 'kafka', /KAFKA_BROKERS: "kafka" is not host:port/],
    ['KAFKA_BROKERS', 'kafka:9092,kafka2', /KAFKA_BROKERS: "kafka2"/],
    ['KAFKA_BROKERS', 'kafka:0', /KAFKA_BROKERS/],
    ['KAFKA_BROKERS', 'kafka:70000', /KAFKA_BROKERS/],
    ['KAFKA_BROKERS', '[::1]:9092', /KAFKA_BROKERS/],
    ['KAFKA_BROKERS', 'kafka:9092/x', /KAFKA_BROKERS/],
    ['JWT_JWKS_URL', 'https://', /JWT_JWKS_URL: not a URL/],
    ['JWT_JWKS_URL', 'http://', /JWT_JWKS_URL: not a URL/],
    ['SCHEMA_REGISTRY_URL', 'http://:8081/apis', /SCHEMA_REGISTRY_URL: not a URL/],
  ])('%s=%s stops start-up naming the setting', (key, value, message) => {
    const env = key === 'JWT_JWKS_URL' ? { [key]: value } : { ...base, [key]: value };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  test('a message never repeats the password of a MONGO_URL', () => {
    expect(() => loadConfig({ ...base, MONGO_URL: 'mongodb://user:s3cret-pw@db:port/' })).toThrow(/^Invalid configuration: MONGO_URL: (?!.*s3cret)/);
  });

  test('valid values pass: replica sets, SRV, options; brokers by name or address', () => {
    const c = loadConfig({
      ...base,
      MONGO_URL: 'mongodb://a:27017,b:27017/?replicaSet=rs0&w=majority',
      KAFKA_BROKERS: 'kafka-0.kafka:9092,10.0.0.7:9093,my_kafka:9092',
    });
    expect(c.KAFKA_BROKERS).toEqual(['kafka-0.kafka:9092', '10.0.0.7:9093', 'my_kafka:9092']);
    expect(loadConfig({ ...base, MONGO_URL: 'mongodb+srv://cluster0.example.net/' }).MONGO_URL).toBe('mongodb+srv://cluster0.example.net/');
    expect(loadConfig({ JWT_JWKS_URL: 'http://lms:8000/oauth2/jwks' }).JWT_JWKS_URL).toBe('http://lms:8000/oauth2/jwks');
  });
});

test('TRUST_PROXY is off unless set to on', () => {
  expect(loadConfig(base).TRUST_PROXY).toBe('off');
  expect(loadConfig({ ...base, TRUST_PROXY: 'on' }).TRUST_PROXY).toBe('on');
  expect(() => loadConfig({ ...base, TRUST_PROXY: 'yes' })).toThrow(/TRUST_PROXY/);
});

test.each([
  ['MONGO_URL', 'mongodb://'],
  ['KAFKA_BROKERS', 'kafka'],
  ['KAFKA_SESSION_TIMEOUT_MS', '1000'],
  ['CHANGE_RELAY_LEASE_MS', 'soon'],
])('the process with %s=%s exits 2 with one line naming the setting, no stack trace', (key, value) => {
  const root = path.resolve(__dirname, '../..');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...base, [key]: value };
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env, encoding: 'utf8', timeout: 20000 });
  expect(res.status).toBe(2);
  expect(res.stderr).toMatch(new RegExp(`^Invalid configuration: ${key}: [^\\n]+\\n$`));
  expect(res.stdout + res.stderr).not.toMatch(/\bat .*\.(ts|js):\d+/);
});

test('the schema registry is optional; its basic auth takes a user and a password together, a URL, and https (never the password in clear over http://)', () => {
  expect(loadConfig(base).SCHEMA_REGISTRY_URL).toBeUndefined();
  const url = 'https://registry:8081/apis/ccompat/v7';
  expect(loadConfig({ ...base, SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_USERNAME: 'u', SCHEMA_REGISTRY_PASSWORD: 'p' })).toMatchObject({
    SCHEMA_REGISTRY_URL: url,
    SCHEMA_REGISTRY_USERNAME: 'u',
    SCHEMA_REGISTRY_PASSWORD: 'p',
  });
  expect(() => loadConfig({ ...base, SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_USERNAME: 'u' })).toThrow(
    /SCHEMA_REGISTRY_PASSWORD: required with SCHEMA_REGISTRY_USERNAME/,
  );
  expect(() => loadConfig({ ...base, SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_PASSWORD: 'p' })).toThrow(/set without SCHEMA_REGISTRY_USERNAME/);
  expect(() => loadConfig({ ...base, SCHEMA_REGISTRY_USERNAME: 'u', SCHEMA_REGISTRY_PASSWORD: 'p' })).toThrow(/SCHEMA_REGISTRY_URL is not$/);
  expect(() =>
    loadConfig({ ...base, SCHEMA_REGISTRY_URL: 'http://registry:8081/apis/ccompat/v7', SCHEMA_REGISTRY_USERNAME: 'u', SCHEMA_REGISTRY_PASSWORD: 'p' }),
  ).toThrow(
    'Invalid configuration: SCHEMA_REGISTRY_USERNAME: basic auth over an http:// SCHEMA_REGISTRY_URL would send the password in clear: use the https:// URL of the registry',
  );
});

test('the process exits non-zero at start-up with the message on stderr', () => {
  const root = path.resolve(__dirname, '../..');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env, encoding: 'utf8', timeout: 20000 });
  expect(res.status).toBe(2);
  expect(res.stderr).toMatch(/JWT_SECRET.*JWT_PUBLIC_KEY.*JWT_JWKS_URL/);
});

describe('the one JWT algorithm (SPEC §2: any other is refused)', () => {
  const pem = (type: 'rsa' | 'ec', curve = 'P-256') =>
    (type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: curve })).publicKey
      .export({ type: 'spki', format: 'pem' })
      .toString();

  test('follows the key: HS256 for a secret, RS256 for an RSA key, ES256 for a P-256 key, JWT_ALGORITHM (RS256 by default) for a JWKS URL', () => {
    expect(jwtAlgorithm(loadConfig(base))).toBe('HS256');
    expect(jwtAlgorithm(loadConfig({ JWT_PUBLIC_KEY: pem('rsa') }))).toBe('RS256');
    expect(jwtAlgorithm(loadConfig({ JWT_PUBLIC_KEY: pem('ec') }))).toBe('ES256');
    expect(jwtAlgorithm(loadConfig({ JWT_JWKS_URL: 'https://lms/jwks' }))).toBe('RS256');
    expect(jwtAlgorithm(loadConfig({ JWT_JWKS_URL: 'https://lms/jwks', JWT_ALGORITHM: 'ES256' }))).toBe('ES256');
  });

  test.each([
    ['JWT_ALGORITHM contradicting the key', () => ({ JWT_PUBLIC_KEY: pem('rsa'), JWT_ALGORITHM: 'ES256' }), /JWT_ALGORITHM/],
    ['JWT_ALGORITHM with a secret', () => ({ ...base, JWT_ALGORITHM: 'RS256' }), /JWT_ALGORITHM/],
    ['a PEM that is not a key', () => ({ JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----' }), /JWT_PUBLIC_KEY/],
    ['an EC key on another curve', () => ({ JWT_PUBLIC_KEY: pem('ec', 'P-384') }), /JWT_PUBLIC_KEY/],
  ])('%s stops start-up naming the setting', (_name, env, message) => {
    expect(() => loadConfig(env())).toThrow(ConfigError);
    expect(() => loadConfig(env())).toThrow(message);
  });
});

describe("the LMS's trust path: LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET", () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicJwk = { kid: 'openedx', ...publicKey.export({ format: 'jwk' }) };
  const keySet = JSON.stringify({ keys: [publicJwk] });
  const issuers = JSON.stringify([{ ISSUER: 'http://lms.example.org/oauth2', AUDIENCE: 'openedx' }]);
  const lms = { LMS_JWT_ISSUERS: issuers, LMS_JWT_PUBLIC_SIGNING_JWK_SET: keySet };

  test('alone, with no JWT_* key, it is a configuration; with a service key too', () => {
    const c = loadConfig(lms);
    expect(c.LMS_JWT_ISSUERS).toEqual([{ ISSUER: 'http://lms.example.org/oauth2', AUDIENCE: 'openedx' }]);
    expect(c.LMS_JWT_PUBLIC_SIGNING_JWK_SET?.keys).toHaveLength(1);
    expect(loadConfig({ ...base, ...lms }).JWT_SECRET).toBe(base.JWT_SECRET);
  });

  test('neither trust path stops start-up naming both', () => {
    expect(() => loadConfig({})).toThrow(/no trust path.*JWT_SECRET.*LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET/);
  });

  test.each([
    ['only the issuers', { LMS_JWT_ISSUERS: issuers }, /LMS_JWT_PUBLIC_SIGNING_JWK_SET is not set/],
    ['only the key set', { LMS_JWT_PUBLIC_SIGNING_JWK_SET: keySet }, /LMS_JWT_ISSUERS is not set/],
    ['issuers not JSON', { ...lms, LMS_JWT_ISSUERS: 'http://lms/oauth2' }, /LMS_JWT_ISSUERS: not JSON/],
    ['an empty issuer list', { ...lms, LMS_JWT_ISSUERS: '[]' }, /LMS_JWT_ISSUERS: must be a non-empty JSON list/],
    ['an issuer without AUDIENCE', { ...lms, LMS_JWT_ISSUERS: '[{"ISSUER": "x"}]' }, /LMS_JWT_ISSUERS: entry 0 has no AUDIENCE/],
    [
      'the LMS secret copied along',
      { ...lms, LMS_JWT_ISSUERS: '[{"ISSUER": "x", "AUDIENCE": "y", "SECRET_KEY": "s"}]' },
      /LMS_JWT_ISSUERS: entry 0 has a SECRET_KEY/,
    ],
    ['a key set that is not JSON', { ...lms, LMS_JWT_PUBLIC_SIGNING_JWK_SET: '{keys' }, /LMS_JWT_PUBLIC_SIGNING_JWK_SET: not JSON/],
    ['an empty key set', { ...lms, LMS_JWT_PUBLIC_SIGNING_JWK_SET: '{"keys": []}' }, /LMS_JWT_PUBLIC_SIGNING_JWK_SET: must be a JWK set/],
    [
      'the private JWK instead of the public set',
      { ...lms, LMS_JWT_PUBLIC_SIGNING_JWK_SET: JSON.stringify({ keys: [privateKey.export({ format: 'jwk' })] }) },
      /LMS_JWT_PUBLIC_SIGNING_JWK_SET: key 0 is a private key/,
    ],
    ['an EC key', { ...lms, LMS_JWT_PUBLIC_SIGNING_JWK_SET: '{"keys": [{"kty": "EC", "crv": "P-256", "x": "a", "y": "b"}]}' }, /key 0 is not an RSA key/],
    ['a broken RSA key', { ...lms, LMS_JWT_PUBLIC_SIGNING_JWK_SET: '{"keys": [{"kty": "RSA", "n": "", "e": "AQAB"}]}' }, /key 0 is not a valid RSA public key/],
    ['JWT_ISSUER without a service key', { ...lms, JWT_ISSUER: 'x' }, /JWT_ISSUER applies to the service's keys/],
    ['one issuer for both paths', { ...lms, ...base, JWT_ISSUER: 'http://lms.example.org/oauth2' }, /JWT_ISSUER is also an issuer of LMS_JWT_ISSUERS/],
  ])('%s stops start-up naming the setting', (_name, env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe("the console's sign-in through the LMS: LMS_OAUTH_* and PUBLIC_URL", () => {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const lms = {
    LMS_JWT_ISSUERS: JSON.stringify([{ ISSUER: 'https://lms.example.com/oauth2', AUDIENCE: 'openedx' }]),
    LMS_JWT_PUBLIC_SIGNING_JWK_SET: JSON.stringify({ keys: [{ kid: 'openedx', ...publicKey.export({ format: 'jwk' }) }] }),
  };
  const flow = {
    ...lms,
    LMS_OAUTH_URL: 'https://lms.example.com/',
    LMS_OAUTH_CLIENT_ID: 'course-access-groups-sso',
    LMS_OAUTH_CLIENT_SECRET: 's3cret',
    PUBLIC_URL: 'https://course-access-groups.lms.example.com',
  };

  test('off without a client id; on with one, the exchange going to LMS_OAUTH_URL unless LMS_OAUTH_INTERNAL_URL is set', () => {
    expect(loadConfig(lms).LMS_OAUTH).toBeNull();
    expect(loadConfig(flow).LMS_OAUTH).toEqual({
      browserUrl: 'https://lms.example.com',
      internalUrl: 'https://lms.example.com',
      clientId: 'course-access-groups-sso',
      clientSecret: 's3cret',
      publicUrl: 'https://course-access-groups.lms.example.com',
    });
    expect(loadConfig({ ...flow, LMS_OAUTH_INTERNAL_URL: 'http://lms:8000' }).LMS_OAUTH?.internalUrl).toBe('http://lms:8000');
  });

  test('the secret may come from a file, its one trailing newline dropped', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cag-config-'));
    const file = path.join(dir, 'secret');
    writeFileSync(file, 'from-a-file\n');
    const { LMS_OAUTH_CLIENT_SECRET: _, ...withoutSecret } = flow;
    expect(loadConfig({ ...withoutSecret, LMS_OAUTH_CLIENT_SECRET_FILE: file }).LMS_OAUTH?.clientSecret).toBe('from-a-file');
    writeFileSync(file, '');
    expect(() => loadConfig({ ...withoutSecret, LMS_OAUTH_CLIENT_SECRET_FILE: file })).toThrow(/LMS_OAUTH_CLIENT_SECRET_FILE: .* is empty/);
    expect(() => loadConfig({ ...withoutSecret, LMS_OAUTH_CLIENT_SECRET_FILE: path.join(dir, 'none') })).toThrow(
      /LMS_OAUTH_CLIENT_SECRET_FILE: cannot read .*ENOENT/,
    );
  });

  const { LMS_OAUTH_CLIENT_SECRET: _secret, ...noSecret } = flow;
  const { LMS_OAUTH_URL: _url, ...noLmsUrl } = flow;
  const { PUBLIC_URL: _public, ...noPublicUrl } = flow;
  test.each([
    ['no LMS_OAUTH_URL', noLmsUrl, /LMS_OAUTH_URL: required with LMS_OAUTH_CLIENT_ID/],
    ['no PUBLIC_URL', noPublicUrl, /PUBLIC_URL: required with LMS_OAUTH_CLIENT_ID/],
    ['no secret', noSecret, /LMS_OAUTH_CLIENT_SECRET: required with LMS_OAUTH_CLIENT_ID/],
    ['a secret and a secret file', { ...flow, LMS_OAUTH_CLIENT_SECRET_FILE: '/run/secret' }, /set only one of the two/],
    [
      'no LMS trust path',
      { ...flow, LMS_JWT_ISSUERS: undefined, LMS_JWT_PUBLIC_SIGNING_JWK_SET: undefined, ...base },
      /LMS_JWT_ISSUERS: required with LMS_OAUTH_CLIENT_ID/,
    ],
    ['a PUBLIC_URL with a path', { ...flow, PUBLIC_URL: 'https://lms.example.com/cag' }, /PUBLIC_URL: must be the service's root/],
    ['a PUBLIC_URL that is not a URL', { ...flow, PUBLIC_URL: 'https://' }, /PUBLIC_URL: not a URL/],
    ['an LMS_OAUTH_URL with a query', { ...flow, LMS_OAUTH_URL: 'https://lms.example.com/?a=b' }, /LMS_OAUTH_URL: must not have a query/],
    ['an LMS_OAUTH_INTERNAL_URL that is not http', { ...flow, LMS_OAUTH_INTERNAL_URL: 'ftp://lms' }, /LMS_OAUTH_INTERNAL_URL: must match pattern/],
    ['LMS_OAUTH_URL without a client id', { ...lms, LMS_OAUTH_URL: 'https://lms.example.com' }, /LMS_OAUTH_URL set, but LMS_OAUTH_CLIENT_ID is not/],
  ])('%s stops start-up naming the setting', (_name, env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
