// docs/operations.md: a missing or invalid setting stops start-up with a message naming it.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
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
  ['SCHEMA_REGISTRY_URL', 'registry:8081'],
])('an invalid %s (%s) is refused by name', (key, value) => {
  expect(() => loadConfig({ ...base, [key]: value })).toThrow(new RegExp(key));
});

test('the schema registry is optional; its basic auth takes a user and a password together, and a URL', () => {
  expect(loadConfig(base).SCHEMA_REGISTRY_URL).toBeUndefined();
  const url = 'http://registry:8081/apis/ccompat/v7';
  expect(loadConfig({ ...base, SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_USERNAME: 'u', SCHEMA_REGISTRY_PASSWORD: 'p' })).toMatchObject({
    SCHEMA_REGISTRY_URL: url,
    SCHEMA_REGISTRY_USERNAME: 'u',
    SCHEMA_REGISTRY_PASSWORD: 'p',
  });
  expect(() => loadConfig({ ...base, SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_USERNAME: 'u' })).toThrow(
    /SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD/,
  );
  expect(() => loadConfig({ ...base, SCHEMA_REGISTRY_USERNAME: 'u', SCHEMA_REGISTRY_PASSWORD: 'p' })).toThrow(/SCHEMA_REGISTRY_URL is not$/);
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
