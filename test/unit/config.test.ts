// SPEC §6: a missing or invalid setting stops start-up with a message naming it.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

const base = { JWT_SECRET: 'a-secret-of-sixteen-chars' };

test('defaults follow the SPEC', () => {
  const c = loadConfig(base);
  expect(c.PORT).toBe(8000);
  expect(c.KAFKA_GROUP_ID).toBe('course-access-groups');
  expect(c.KAFKA_TOPICS).toEqual(['user-account-activated', 'user-lifecycle', 'course-catalog']);
  expect(c.SERVICE_ROLE).toBe('all');
  expect(Object.isFrozen(c)).toBe(true);
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
])('an invalid %s (%s) is refused by name', (key, value) => {
  expect(() => loadConfig({ ...base, [key]: value })).toThrow(new RegExp(key));
});

test('the process exits non-zero at start-up with the message on stderr', () => {
  const root = path.resolve(__dirname, '../..');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env, encoding: 'utf8', timeout: 20000 });
  expect(res.status).toBe(2);
  expect(res.stderr).toMatch(/JWT_SECRET.*JWT_PUBLIC_KEY.*JWT_JWKS_URL/);
});
