import { Kafka, type LogEntry, logLevel } from 'kafkajs';
import type { Config } from './config';
import type { Logger } from './log';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** A kafkajs client whose own logs go through pino (info and below demoted to debug: they are chatty). */
export function createKafka(config: Config, log: Logger, clientId = 'course-access-groups'): Kafka {
  const kafkaLog = log.child({ component: 'kafkajs' });
  return new Kafka({
    clientId,
    brokers: [...config.KAFKA_BROKERS],
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { initialRetryTime: 300, maxRetryTime: 10000, retries: 10 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        const method = level <= logLevel.WARN ? (LEVELS[level] ?? 'warn') : 'debug';
        kafkaLog[method]({ kafka: { broker: rest.broker, error: rest.error, groupId: rest.groupId } }, message);
      },
  });
}

/**
 * Answers "is a broker reachable?" for /readyz, with one long-lived admin connection and a
 * short cache so a burst of probes costs one metadata request.
 */
export function brokerProbe(kafka: Kafka, cacheMs = 2000) {
  const admin = kafka.admin({ retry: { retries: 0 } });
  let connected = false;
  let last = { at: 0, ok: false };
  return {
    async reachable(): Promise<boolean> {
      if (Date.now() - last.at < cacheMs) return last.ok;
      let ok = false;
      try {
        if (!connected) {
          await admin.connect();
          connected = true;
        }
        await Promise.race([admin.describeCluster(), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref())]);
        ok = true;
      } catch {
        ok = false;
        if (connected) await admin.disconnect().catch(() => undefined);
        connected = false;
      }
      last = { at: Date.now(), ok };
      return ok;
    },
    async close() {
      if (connected) await admin.disconnect().catch(() => undefined);
      connected = false;
    },
  };
}
