import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import type { MessageHandler } from '../../consumers/consumer';
import { type Config, loadConfig } from '../../src/config';
import { createLogger } from '../../src/log';
import { type Running, startService } from '../../src/runtime';

/**
 * The local stack the tests talk to: scripts/test.sh starts FerretDB, Kafka and the schema
 * registry (or passes the MONGO_URL, KAFKA_BROKERS and SCHEMA_REGISTRY_URL of real servers). Each test file gets its own database, topics
 * and consumer group, so files can run in parallel against one stack.
 */
export const MONGO_URL = process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/';
export const KAFKA_BROKERS = process.env.KAFKA_BROKERS || '127.0.0.1:9092';
/** The Confluent-compatible API of the stack's schema registry (Apicurio); services get it only when a test passes it. */
export const SCHEMA_REGISTRY_URL = process.env.SCHEMA_REGISTRY_URL || 'http://127.0.0.1:8081/apis/ccompat/v7';
export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-1234';

export const uniqueName = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;

export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    PORT: '0',
    MONGO_URL,
    MONGO_DB: uniqueName('t'),
    KAFKA_BROKERS,
    KAFKA_GROUP_ID: uniqueName('g'),
    KAFKA_TOPICS: [uniqueName('activated'), uniqueName('lifecycle'), uniqueName('catalog')].join(','),
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SERVICE_ROLE: 'api',
    // Change events off unless a test names its topic; the audit trail is on, as by default.
    CHANGES_TOPIC: '',
    ...env,
  });
}

export interface TestService extends Running {
  config: Config;
  baseUrl: string;
  /** Stops the service and drops its database. */
  close(): Promise<void>;
}

/** Starts the real service in this process against the local stack and waits until it is ready. */
export async function startTestService(
  env: Record<string, string | undefined> = {},
  opts: { handle?: MessageHandler; waitReady?: boolean } = {},
): Promise<TestService> {
  const config = testConfig(env);
  const running = await startService(config, createLogger(config.LOG_LEVEL), { handle: opts.handle });
  if (opts.waitReady !== false) await running.ready;
  return {
    ...running,
    config,
    baseUrl: `http://127.0.0.1:${running.port}`,
    async close() {
      await running.stop();
      const client = new MongoClient(MONGO_URL, { serverSelectionTimeoutMS: 2000 });
      try {
        await client.db(config.MONGO_DB).dropDatabase();
      } catch {
        // the database may be unreachable in fault tests; nothing to clean then
      } finally {
        await client.close();
      }
    },
  };
}
