import { type Admin, Kafka, type LogEntry, logLevel } from 'kafkajs';
import { describeKafkaFailure, type KafkaSecuritySettings, kafkaSecurityOptions } from './kafka-security';
import type { Logger } from './log';
import { within } from './retry';

/** What a Kafka client is made from: the brokers and the security settings. */
export type KafkaClientSettings = KafkaSecuritySettings & { readonly KAFKA_BROKERS: readonly string[] };

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/**
 * What kafkajs warns of at every new change-relay producer, which limits its retries on purpose
 * (src/changes/relay.ts, SEND_RETRIES): the relay's guarantees rest on each event's id and
 * version, not on one producer id's sequence.
 */
const EXPECTED_WARNING = 'Limiting retries for the idempotent producer may invalidate EoS guarantees';

/** How long every client of the service waits for a connection and for an answer. */
export const CLIENT_TIMEOUTS = { connectionTimeout: 3000, requestTimeout: 10000 } as const;
/** How kafkajs itself retries a connection or request (`retries` is given per client). */
export const CLIENT_RETRY = { initialRetryTime: 300, maxRetryTime: 10000 } as const;

/**
 * A kafkajs client whose own logs go through pino (info and below demoted to debug: they are
 * chatty). `retries` is how often kafkajs itself retries a connection or request. Every client of
 * the process is made here, so TLS and SASL (src/kafka-security.ts) apply to all of them alike.
 */
export function createKafka(config: KafkaClientSettings, log: Logger, clientId = 'course-access-groups', retries = 10): Kafka {
  const kafkaLog = log.child({ component: 'kafkajs' });
  return new Kafka({
    clientId,
    brokers: [...config.KAFKA_BROKERS],
    ...kafkaSecurityOptions(config),
    ...CLIENT_TIMEOUTS,
    retry: { ...CLIENT_RETRY, retries },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        const method = level <= logLevel.WARN && message !== EXPECTED_WARNING ? (LEVELS[level] ?? 'warn') : 'debug';
        kafkaLog[method]({ kafka: { broker: rest.broker, error: rest.error, groupId: rest.groupId } }, message);
      },
  });
}

/**
 * Answers "is a broker reachable?" for /readyz and for start-up, within `timeoutMs` whatever the
 * broker does: a client of its own without kafkajs's retries (with them, a connection to a broker
 * that is down is retried for about a minute), one long-lived admin connection, one probe at a
 * time, and a short cache so a burst of probes costs one metadata request. Its client logs
 * nothing (a failure every few seconds while the broker is away): `failure()` says why instead.
 */
export function brokerProbe(config: KafkaClientSettings, log: Logger, opts: { cacheMs?: number; timeoutMs?: number } = {}) {
  const { cacheMs = 2000, timeoutMs = 2000 } = opts;
  // A new client at each connection, so TLS files and the SASL password are read again.
  const newAdmin = () => createKafka(config, log.child({}, { level: 'silent' }), 'course-access-groups-probe', 0).admin({ retry: { retries: 0 } });
  let admin: Admin | null = null;
  let connected = false;
  let last: { at: number; ok: boolean; error?: Error } = { at: 0, ok: false };
  let probing: Promise<boolean> | null = null;
  const probe = async (): Promise<boolean> => {
    try {
      if (!connected) {
        admin = newAdmin();
        await admin.connect();
        connected = true;
      }
      await admin!.describeCluster();
      last = { at: Date.now(), ok: true };
    } catch (err) {
      await admin?.disconnect().catch(() => undefined);
      connected = false;
      last = { at: Date.now(), ok: false, error: err as Error };
    }
    return last.ok;
  };
  return {
    reachable(): Promise<boolean> {
      if (Date.now() - last.at < cacheMs) return Promise.resolve(last.ok);
      probing ??= probe().finally(() => {
        probing = null;
      });
      return within(probing, timeoutMs, false);
    },
    /** Why the last probe failed (undefined: it succeeded, or is still under way). */
    failure: (): Error | undefined => (last.ok ? undefined : last.error),
    /** The last failure in one line naming the broker and the setting to fix (null: none, or no probe failed). */
    why: () => (last.ok || !last.error ? null : describeKafkaFailure(last.error, config)),
    async close() {
      if (probing) await within(probing, timeoutMs, false);
      if (connected) await admin?.disconnect().catch(() => undefined);
      connected = false;
    },
  };
}

/**
 * Whether the broker refused a send because a message or the batch is over its size limit
 * (`message.max.bytes`, the topic's `max.message.bytes`): sending the same again never passes.
 * Causes are followed: kafkajs wraps what a send met.
 */
export function isTooLarge(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    const type = (e as { type?: unknown }).type;
    if (type === 'MESSAGE_TOO_LARGE' || type === 'RECORD_LIST_TOO_LARGE') return true;
  }
  return false;
}
