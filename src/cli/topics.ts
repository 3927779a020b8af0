import { ConfigError, loadKafkaCliConfig } from '../config';
import { createKafka } from '../kafka';
import { describeKafkaFailure } from '../kafka-security';
import { createNeededTopics, describePlan } from '../kafka-topics';
import { createLogger } from '../log';
import type { CliIo } from './main';

/** A partition or replica count: a positive integer, or -1 for the broker's default. */
function count(name: string, value: string | undefined): number | string {
  if (value === undefined) return -1;
  const n = Number(value);
  return Number.isInteger(n) && (n === -1 || (n >= 1 && n <= 10000)) ? n : `--${name} must be a positive integer (or -1: the broker's default)`;
}

/**
 * `cag topics`: prints the topics and ACLs the service's Kafka settings need (stdout, so it can
 * be saved or piped); with `--create`, creates the missing topics and says what became of each
 * (stderr). Exit 0 when every topic exists afterwards, 1 when one was refused or the broker
 * could not be reached, 2 on a bad option.
 */
export async function runTopics(values: { create?: boolean; partitions?: string; 'replication-factor'?: string }, io: CliIo): Promise<number> {
  const partitions = count('partitions', values.partitions);
  const replicationFactor = count('replication-factor', values['replication-factor']);
  for (const problem of [partitions, replicationFactor]) {
    if (typeof problem === 'string') {
      io.stderr.write(`${problem}\n`);
      return 2;
    }
  }
  if (!values.create && (values.partitions !== undefined || values['replication-factor'] !== undefined)) {
    io.stderr.write('--partitions and --replication-factor go with --create\n');
    return 2;
  }
  let config;
  try {
    config = loadKafkaCliConfig(io.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
  io.stdout.write(describePlan(config));
  if (!values.create) return 0;

  const log = createLogger(config.LOG_LEVEL, io.stderr as never);
  // A few retries of kafkajs's own: a broker that is down is said at once, not after a minute.
  const admin = createKafka(config, log, 'course-access-groups-topics', 2).admin();
  try {
    await admin.connect();
    const outcomes = await createNeededTopics(admin, config, { partitions: partitions as number, replicationFactor: replicationFactor as number });
    for (const o of outcomes) {
      io.stderr.write(o.outcome === 'refused' ? `${o.topic}: not created: ${o.reason}\n` : `${o.topic}: ${o.outcome}\n`);
    }
    const refused = outcomes.filter((o) => o.outcome === 'refused');
    if (refused.length > 0) {
      io.stderr.write(
        `${refused.length} topic(s) not created: give this principal Create on them (or on the cluster), or have them created by someone who may (the list above)\n`,
      );
      return 1;
    }
    return 0;
  } catch (err) {
    io.stderr.write(`${describeKafkaFailure(err, config).reason}\n`);
    return 1;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
