import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Admin } from 'kafkajs';
import type { KafkaSecuritySettings } from './kafka-security';

/**
 * The topics and ACLs the service needs on a cluster that creates nothing by itself and
 * authorizes with ACLs (Confluent Cloud, MSK, Strimzi): what `cag topics` prints, and creates
 * with `--create`. One list, so the docs, the command and the service cannot disagree.
 */

/** The dead-letter topic of `topic`: `<prefix><topic>.dlq` (KAFKA_DLQ_PREFIX; the chart's is the release's). */
export const dlqTopic = (topic: string, prefix = ''): string => `${prefix}${topic}.dlq`;

export interface TopicSettings extends KafkaSecuritySettings {
  readonly KAFKA_BROKERS: readonly string[];
  readonly KAFKA_GROUP_ID: string;
  readonly KAFKA_TOPICS: readonly string[];
  readonly KAFKA_DLQ_PREFIX: string;
  /** Empty: change events are off, and no topic is written for them. */
  readonly CHANGES_TOPIC: string;
}

export interface NeededTopic {
  name: string;
  /** `read`: the LMS writes it, the service consumes it; `write`: the service writes it. */
  use: 'read' | 'write';
  what: string;
}

/** Every topic the service reads or writes with these settings, consumed ones first. */
export function neededTopics(settings: TopicSettings): NeededTopic[] {
  const topics: NeededTopic[] = settings.KAFKA_TOPICS.map((name) => ({ name, use: 'read', what: "the LMS's events, consumed" }));
  for (const name of settings.KAFKA_TOPICS) {
    topics.push({ name: dlqTopic(name, settings.KAFKA_DLQ_PREFIX), use: 'write', what: `dead letters of ${name}` });
  }
  if (settings.CHANGES_TOPIC !== '') topics.push({ name: settings.CHANGES_TOPIC, use: 'write', what: 'change events (docs/events-published.md)' });
  return topics;
}

export interface NeededAcl {
  operation: 'Read' | 'Write' | 'Describe' | 'Create' | 'IdempotentWrite';
  resource: 'Group' | 'Topic' | 'Cluster';
  name: string;
  /** When the ACL is needed only in some cases (null: always). */
  when: string | null;
}

/**
 * The ACLs (Kafka's operation and resource names, as kafka-acls.sh spells them) the service's
 * principal needs: Read on its group and on each consumed topic (Read implies Describe; listed
 * for the clusters, like Confluent Cloud's, whose tools ask for it by name), Write and Describe on
 * each topic it writes, IdempotentWrite on the cluster for the change relay's idempotent producer
 * on brokers older than 2.8 (KIP-679 lets Write on a topic do), Create only to create topics.
 */
export function neededAcls(settings: TopicSettings): NeededAcl[] {
  const acls: NeededAcl[] = [{ operation: 'Read', resource: 'Group', name: settings.KAFKA_GROUP_ID, when: null }];
  const topics = neededTopics(settings);
  for (const t of topics.filter((x) => x.use === 'read')) {
    acls.push({ operation: 'Read', resource: 'Topic', name: t.name, when: null }, { operation: 'Describe', resource: 'Topic', name: t.name, when: null });
  }
  for (const t of topics.filter((x) => x.use === 'write')) {
    acls.push({ operation: 'Write', resource: 'Topic', name: t.name, when: null }, { operation: 'Describe', resource: 'Topic', name: t.name, when: null });
  }
  if (settings.CHANGES_TOPIC !== '') {
    acls.push({ operation: 'IdempotentWrite', resource: 'Cluster', name: 'kafka-cluster', when: 'brokers older than Kafka 2.8 only' });
  }
  for (const t of topics) acls.push({ operation: 'Create', resource: 'Topic', name: t.name, when: 'only for `cag topics --create`' });
  return acls;
}

/**
 * The principal the broker sees, as its default principal builder names it: `User:<SASL user>`,
 * or with a client certificate and no SASL `User:<the certificate's subject>` (RFC 2253 order, as
 * Kafka prints it). Null when it cannot be told from the settings (no authentication: the
 * listener's own principal, often User:ANONYMOUS; OAUTHBEARER: the token's subject).
 */
export function principalOf(settings: KafkaSecuritySettings): string | null {
  if (settings.KAFKA_SASL_MECHANISM !== undefined) return settings.KAFKA_SASL_USERNAME ? `User:${settings.KAFKA_SASL_USERNAME}` : null;
  if (settings.KAFKA_SSL_CERT_FILE === undefined) return null;
  try {
    const subject = new X509Certificate(readFileSync(settings.KAFKA_SSL_CERT_FILE)).subject;
    return `User:${subject.split('\n').reverse().join(',')}`;
  } catch {
    return null; // start-up checks the file and says why; here the plan is still printed
  }
}

const quote = (s: string) => (/^[A-Za-z0-9._:=,@+-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);

/** What `cag topics` prints: the topics, the ACLs, and the kafka-acls.sh commands that add them. */
export function describePlan(settings: TopicSettings): string {
  const principal = principalOf(settings);
  const lines: string[] = [];
  const topics = neededTopics(settings);
  const width = Math.max(...topics.map((t) => t.name.length));
  lines.push('Topics (create them where the cluster does not create topics on first use: `cag topics --create`):');
  for (const t of topics) lines.push(`  ${t.name.padEnd(width)}  ${t.use.padEnd(5)}  ${t.what}`);
  lines.push('', `ACLs for ${principal ?? "this service's principal (User:<name>: not known from these settings)"}:`);
  const acls = neededAcls(settings);
  for (const a of acls) lines.push(`  ${a.operation.padEnd(15)} ${a.resource.padEnd(7)} ${a.name}${a.when ? `  (${a.when})` : ''}`);
  lines.push('', 'As kafka-acls.sh commands (add --command-config for an authenticated admin connection):');
  const who = quote(principal ?? 'User:PRINCIPAL');
  const bootstrap = quote(settings.KAFKA_BROKERS.join(','));
  for (const a of acls) {
    const resource = a.resource === 'Cluster' ? '--cluster' : `--${a.resource.toLowerCase()} ${quote(a.name)}`;
    const command = `  kafka-acls.sh --bootstrap-server ${bootstrap} --add --allow-principal ${who} --operation ${a.operation} ${resource}`;
    lines.push(a.when ? `${command}   # ${a.when}` : command);
  }
  return `${lines.join('\n')}\n`;
}

export interface CreateOptions {
  /** -1: the broker's default (num.partitions, default.replication.factor). */
  partitions: number;
  replicationFactor: number;
  /** How long to wait for a new topic's partitions to have leaders (LEADER_WAIT_MS). */
  leaderWaitMs?: number;
  /** How long a new topic may be missing from the broker's list before it is asked for by name (UNLISTED_MS). */
  unlistedMs?: number;
}

/** A new topic has leaders within seconds; past this the command goes on (the topic exists). */
export const LEADER_WAIT_MS = 30_000;

/** How long a topic just created may be missing from the broker's list before it is asked for by name. */
export const UNLISTED_MS = 5_000;

const NOT_YET = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);

/** Waits until every partition of a topic just created has a leader, or `waitMs` has passed; never throws. */
async function leadersKnown(admin: Admin, topic: string, waitMs: number, unlistedMs: number): Promise<void> {
  const start = Date.now();
  for (;;) {
    try {
      // Asked by name once the broker lists it: kafkajs logs each refusal of a topic not in the
      // broker's metadata yet at error level, which an operator would read as a failure. Or once
      // `unlistedMs` have passed: a principal that may create a topic but not describe it never
      // sees it listed, and is refused at once by name.
      const asked = (await admin.listTopics()).includes(topic) || Date.now() - start >= unlistedMs;
      const { topics } = asked ? await admin.fetchTopicMetadata({ topics: [topic] }) : { topics: [] };
      if (asked && topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (err) {
      // Anything else (no Describe on it, say) is no reason to call a topic made not made.
      if (!NOT_YET.has((err as { type?: string }).type ?? '')) return;
    }
    if (Date.now() - start >= waitMs) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export type CreateOutcome = { topic: string; outcome: 'created' | 'exists' } | { topic: string; outcome: 'refused'; reason: string };

/**
 * Creates each needed topic that does not exist, one at a time so one refusal (no Create ACL on
 * it) does not hide what became of the others. An existing topic is left as it is.
 */
export async function createNeededTopics(admin: Admin, settings: TopicSettings, options: CreateOptions): Promise<CreateOutcome[]> {
  const outcomes: CreateOutcome[] = [];
  for (const { name } of neededTopics(settings)) {
    try {
      // kafkajs's own wait for leaders gives up on UNKNOWN_TOPIC_OR_PARTITION, which a KRaft
      // broker answers until the new topic reaches its metadata: the topic was made all the same.
      const created = await admin.createTopics({
        topics: [{ topic: name, numPartitions: options.partitions, replicationFactor: options.replicationFactor }],
        waitForLeaders: false,
      });
      if (created) await leadersKnown(admin, name, options.leaderWaitMs ?? LEADER_WAIT_MS, options.unlistedMs ?? UNLISTED_MS);
      outcomes.push({ topic: name, outcome: created ? 'created' : 'exists' });
    } catch (err) {
      const errors = (err as { errors?: unknown[] }).errors ?? [err];
      const first = errors[0] as { type?: string; message?: string } | undefined;
      if (first?.type === 'TOPIC_ALREADY_EXISTS') outcomes.push({ topic: name, outcome: 'exists' });
      else outcomes.push({ topic: name, outcome: 'refused', reason: first?.type ?? first?.message ?? String(err) });
    }
  }
  return outcomes;
}
