import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kafka, Producer } from 'kafkajs';
import type { Db, Document } from 'mongodb';
import { insertAuditRecords } from '../db/audit-log';
import { readChangeLog, recordChanges } from '../db/change-log';
import type { ChangeLogEntry, OutboxDoc } from '../db/collections';
import { acquireLease, releaseLease, renewLease } from '../db/lease';
import { countOutbox, deleteIntents, INTENT_GRACE_MS, outboxSignals, readOutbox, readRecords, recordKey, TRACKED } from '../db/outbox';
import { isTooLarge } from '../kafka';
import type { Logger } from '../log';
import type { Metrics } from '../metrics';
import { backoffDelay, DEFAULT_RETRY, pause, type RetryPolicy } from '../retry';
import { buildAuditRecords } from './audit-records';
import { buildChangeEvent, changeKind, toMessage } from './events';

export const RELAY_LEASE = 'change-relay';
/** How many "done" intent ids the relay remembers (a few MiB at most). */
const DONE_MEMORY = 100_000;

/**
 * Bounds of one send. The broker refuses a request whose batch is over its `message.max.bytes`
 * (1 MiB by default), however the changes piled up (one import, a backlog after an outage).
 */
const SEND_MAX_MESSAGES = 500;
const SEND_MAX_BYTES = 256 * 1024;

/**
 * kafkajs's own tries of a send after the first. Its default for an idempotent producer is to
 * retry forever, on the connection it has: one that went quiet without a reset (a firewall or NAT
 * that forgot it) times every try out (10 s each), and the relay waited for good. A send that
 * fails after these goes again through a new producer and new connections (replaceProducer).
 * A send is never given up while kafkajs may still deliver it: it would land after the newer
 * events sent in its place.
 */
const SEND_RETRIES = 3;

type Outgoing = { built: ReturnType<typeof buildChangeEvent>; message: ReturnType<typeof toMessage> };

/** A message as sent: its size is what counts toward the broker's limit. */
interface Sendable {
  key: string;
  value: string;
  headers: Record<string, string>;
}

const sizeOf = (m: Sendable) =>
  Buffer.byteLength(m.key) + Buffer.byteLength(m.value) + Object.entries(m.headers).reduce((n, [k, v]) => n + k.length + v.length, 0);

/** The events in order, in chunks of at most SEND_MAX_MESSAGES and SEND_MAX_BYTES (a larger event goes alone). */
export function sendChunks<T extends { message: Sendable }>(items: T[], maxMessages = SEND_MAX_MESSAGES, maxBytes = SEND_MAX_BYTES): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item.message);
    if (current.length > 0 && (current.length >= maxMessages || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export interface RelayOptions {
  db: Db;
  /**
   * Makes the Kafka client of the broker change events go to (null: change events are off): each
   * new producer gets a new client, so TLS files and the SASL password are read again.
   */
  kafka: (() => Kafka) | null;
  topic: string | null;
  /** Whether to write audit records for audited intents (AUDIT_LOG). */
  audit: boolean;
  log: Logger;
  metrics: Metrics;
  /** An intent the change log has not named done is resolved after this (its process died). */
  graceMs?: number;
  /** Intents resolved per step. */
  batchSize?: number;
  /** The pause after a step that did something: later changes gather into the next batch. */
  batchEveryMs?: number;
  /** The pause after a step that found nothing (a write in this process wakes the relay sooner). */
  idleMs?: number;
  leaseMs?: number;
  retry?: RetryPolicy;
}

export interface ChangeRelay {
  start(): void;
  stop(): Promise<void>;
  isLeader(): boolean;
}

/**
 * The change relay: resolves outbox intents (src/db/outbox.ts) in their order, publishing the
 * change events and writing the audit records, then deletes them. One relay at a time per
 * database, by a lease (src/db/lease.ts); every process runs one, the others stand by and take
 * over within a lease's length when the holder dies (a clean stop hands the lease back at once).
 *
 * A step: read the outbox's head and the change log (which names the intents whose writes are
 * done); take the intents that are done, or older than the grace period, in `_id` order, skipping
 * any record that has an earlier intent still in flight (so a record's events leave in outbox
 * order); reserve their versions from the lease's counter (which also proves the lease is still
 * ours); read the records as they are now; publish one event per record, keyed by record, in
 * bounded sends (sendChunks); write the audit records; delete the intents. A crash anywhere repeats the step: events may
 * be published twice (same id, maybe a newer state and version), audit records are not (their
 * `_id` is their change's). Failures back off with the service's retry policy, forever.
 *
 * An intent resolved after the grace period, without the change log naming it done, may be a
 * write whose process died before recording it: the relay records the change in the change
 * sequence, so every process's cache drops those records (at most the grace period late).
 *
 * A relay resolves only what it can do in full: it publishes only with `CHANGES_TOPIC` set, and
 * audits only with `AUDIT_LOG` on. Each intent says what it asks for (a change event when its
 * process had them on, an audit record when its write was audited); a relay that meets one asking
 * for more than it can do does not take the lease, or hands it back, and stands by for a process
 * that can: the intents wait (`changes_pending`), they are never resolved half-done. A relay that
 * can do neither never competes.
 */
export function createChangeRelay(opts: RelayOptions): ChangeRelay {
  const { db, log, metrics, topic } = opts;
  const graceMs = opts.graceMs ?? INTENT_GRACE_MS;
  const batchSize = opts.batchSize ?? 200;
  const batchEveryMs = opts.batchEveryMs ?? 500;
  const idleMs = opts.idleMs ?? 1000;
  const leaseMs = opts.leaseMs ?? 15_000;
  const retry = opts.retry ?? DEFAULT_RETRY;
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const newProducer = (): Producer | null =>
    opts.kafka && topic
      ? opts.kafka().producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true, retry: { retries: SEND_RETRIES } })
      : null;
  let producer = newProducer();
  let producerConnected = false;
  /** Whether this relay can do all that `entry` asks for (see above). */
  const canResolve = (entry: OutboxDoc) => (producer !== null || !entry.e) && (opts.audit || !entry.audit);
  const canDoAll = producer !== null && opts.audit;
  let standingBy = false;
  let leader = false;
  const stopping = new AbortController();
  let wake: AbortController | null = null;
  let loop: Promise<void> | null = null;
  let renewer: NodeJS.Timeout | undefined;

  /**
   * Intents the change log has named done, gathered at every step and every lease renewal: the
   * log keeps only each collection's newest changes, and a relay held up (a broker down) would
   * otherwise see the older ones only after the grace period. Bounded; resolved ones leave.
   */
  const done = new Set<string>();
  const collectDone = async () => {
    for (const changes of (await readChangeLog(db, [...TRACKED])).values()) for (const c of changes.recent) if (c.intent) done.add(c.intent);
    for (const id of done) {
      if (done.size <= DONE_MEMORY) break;
      done.delete(id); // the oldest first: a forgotten one is resolved after the grace period
    }
  };

  const onDone = (dbName: string) => {
    if (dbName === db.databaseName) wake?.abort();
  };

  const setLeader = (value: boolean) => {
    if (value !== leader) log.info({ owner }, value ? 'change relay holds the lease' : 'change relay lost the lease');
    leader = value;
    metrics.relayLeader.set(value ? 1 : 0);
  };

  /** Notes (in the log, once) that intents wait for a relay that can do what they ask. */
  const standBy = (value: boolean, entry?: OutboxDoc) => {
    if (value && !standingBy) {
      const missing = [entry?.e && !producer ? 'publish change events (CHANGES_TOPIC)' : null, entry?.audit && !opts.audit ? 'audit (AUDIT_LOG)' : null];
      log.warn({ owner, intent: entry?._id, cannot: missing.filter(Boolean) }, 'change relay stands by: an intent asks for what this process cannot do');
    }
    standingBy = value;
  };

  /** Before taking the lease: whether every intent at the outbox's head is one this relay can resolve in full. */
  async function mayLead(): Promise<boolean> {
    if (canDoAll) return true;
    const beyond = (await readOutbox(db, batchSize)).find((e) => !canResolve(e));
    standBy(beyond !== undefined, beyond);
    return beyond === undefined;
  }

  /**
   * Sends change events in order; a chunk the broker refuses as too large is sent again one event
   * at a time, and an event refused alone is logged with its ids, counted and skipped: it can
   * never pass, and the changes after it must not wait for it.
   */
  async function publish(chunk: Outgoing[]): Promise<void> {
    try {
      await producer!.send({ topic: topic!, acks: -1, messages: chunk.map((o) => o.message) });
    } catch (err) {
      if (!isTooLarge(err)) {
        await replaceProducer();
        throw err;
      }
      if (chunk.length > 1) {
        for (const one of chunk) await publish([one]);
        return;
      }
      const { event } = chunk[0]!.built;
      metrics.changesUnpublishable.inc({ type: event.type });
      log.error(
        {
          event_id: event.id,
          event_type: event.type,
          subject: event.subject,
          bytes: sizeOf(chunk[0]!.message),
          err: { name: (err as Error).name, message: (err as Error).message },
        },
        'change event too large for the broker even alone; skipped',
      );
      return;
    }
    for (const o of chunk) metrics.changesPublished.inc({ type: o.built.event.type });
  }

  /**
   * After a failed send, the next one goes through a new producer (a new producer id). The broker
   * may have appended the failed batch (its answer lost): kafkajs then reuses the batch's sequence
   * numbers for the next one (kafkajs/src/producer/sendMessages.js takes them back on any error),
   * which the broker refuses as out of order, forever, or, when the new batch has the same count,
   * takes for a duplicate and drops. A new id starts a new sequence; the step's events go again.
   */
  async function replaceProducer(): Promise<void> {
    const failed = producer;
    producer = newProducer();
    producerConnected = false;
    log.info({ owner }, 'change relay replaces its producer after a failed send');
    await failed?.disconnect().catch(() => undefined);
  }

  /** One batch; true when it resolved something (so another may follow at once). */
  async function step(): Promise<boolean> {
    const [pending] = await Promise.all([readOutbox(db, batchSize), collectDone()]);
    const beyond = pending.find((e) => !canResolve(e));
    if (beyond) {
      // Another process (another configuration) asks for more than this one can do: hand over.
      await releaseLease(db, RELAY_LEASE, owner);
      setLeader(false);
      standBy(true, beyond);
      return false;
    }
    const now = Date.now();
    metrics.changesPending.set(pending.length < batchSize ? pending.length : await countOutbox(db));
    metrics.changesLag.set(pending.length > 0 ? Math.max(0, now - pending[0]!.t.getTime()) / 1000 : 0);

    const blocked = new Set<string>();
    const ready: OutboxDoc[] = [];
    for (const entry of pending) {
      const keys = entry.k.map((k) => recordKey(entry.c, k));
      const resolvable = done.has(entry._id) || now - entry.t.getTime() > graceMs;
      if (!resolvable || keys.some((k) => blocked.has(k))) {
        for (const k of keys) blocked.add(k);
        continue;
      }
      ready.push(entry);
    }
    if (ready.length === 0) return false;

    const count = producer ? ready.reduce((n, e) => n + e.k.length, 0) : 0;
    let version = 0;
    if (count > 0) {
      // Versions come before the reads: a record read later never gets a lower version.
      const top = await renewLease(db, RELAY_LEASE, owner, leaseMs, count);
      if (top === null) {
        setLeader(false);
        return false;
      }
      version = top - count;
    }
    const states = await readRecords(
      db,
      ready.flatMap((e) => e.k.map((k) => [e.c, k] as const)),
    );
    const state = (e: OutboxDoc, k: string) => states.get(recordKey(e.c, k)) ?? null;

    if (producer && count > 0) {
      const built = ready.flatMap((e) => e.k.map((k, i) => buildChangeEvent({ entry: e, index: i, doc: state(e, k), version: ++version })));
      // A relay paused while it read may have been replaced, and its reads be older than the new
      // holder's: it publishes only if the lease is still its own (a slow read alone is no reason
      // to stop: under load the same step would outlast any bound again and again).
      if ((await renewLease(db, RELAY_LEASE, owner, leaseMs)) === null) {
        setLeader(false);
        return false;
      }
      if (!producerConnected) {
        await producer.connect();
        producerConnected = true;
      }
      for (const chunk of sendChunks(built.map((b) => ({ built: b, message: toMessage(b) })))) await publish(chunk);
    }

    if (opts.audit) {
      // A record's "after" is what the next intent of the same record saw before its write, when
      // one was read (ready or still in flight: a delete in flight has already removed what a
      // create made), else the record as read now.
      const resolving = new Set(ready.map((e) => e._id));
      const nextBefore = new Map<string, Document | null>();
      const records = [];
      for (let j = pending.length - 1; j >= 0; j--) {
        const e = pending[j]!;
        if (resolving.has(e._id)) {
          const after = e.k.map((k) => {
            const rk = recordKey(e.c, k);
            return nextBefore.has(rk) ? nextBefore.get(rk)! : state(e, k);
          });
          records.unshift(...buildAuditRecords(e, after));
        }
        if (e.b) {
          e.k.forEach((k, i) => {
            nextBefore.set(recordKey(e.c, k), e.b![i] ?? null);
          });
        }
      }
      metrics.auditRecorded.inc(await insertAuditRecords(db, records));
    }

    // Intents resolved without their "done": their change record may never have been written.
    const unrecorded = new Map<OutboxDoc['c'], ChangeLogEntry[]>();
    for (const e of ready) {
      if (done.has(e._id)) continue;
      unrecorded.set(e.c, [...(unrecorded.get(e.c) ?? []), ...e.k.map((k) => ({ k, o: e.o }))]);
    }
    for (const [collection, entries] of unrecorded) await recordChanges(db, collection, entries);

    await deleteIntents(
      db,
      ready.map((e) => e._id),
    );
    for (const e of ready) done.delete(e._id);
    log.debug({ intents: ready.length, events: count, types: [...new Set(ready.map((e) => changeKind(e.c).type))] }, 'changes relayed');
    return true;
  }

  async function run(): Promise<void> {
    let failures = 0;
    while (!stopping.signal.aborted) {
      try {
        if (!leader) {
          setLeader((await mayLead()) && (await acquireLease(db, RELAY_LEASE, owner, leaseMs)));
          if (!leader) {
            await pause(leaseMs / 3, stopping.signal);
            continue;
          }
        }
        wake = new AbortController();
        const worked = await step();
        failures = 0;
        await pause(worked ? batchEveryMs : idleMs, worked ? stopping.signal : AbortSignal.any([stopping.signal, wake.signal]));
      } catch (err) {
        if (stopping.signal.aborted) break;
        failures++;
        metrics.relayFailures.inc();
        const delay = backoffDelay(failures, retry);
        log.warn(
          { attempt: failures, retry_in_ms: delay, err: { name: (err as Error).name, message: (err as Error).message } },
          'change relay step failed; retrying',
        );
        await pause(delay, stopping.signal);
      }
    }
  }

  return {
    start() {
      if (loop || stopping.signal.aborted) return;
      if (!producer && !opts.audit) return; // every intent asks for one of the two: none is ours to resolve
      outboxSignals.on('done', onDone);
      // Renewed apart from the steps: a send waiting for a broker that is down must not lose the
      // lease, and the backlog it leaves must show in the gauges meanwhile.
      renewer = setInterval(() => {
        if (!leader) return;
        renewLease(db, RELAY_LEASE, owner, leaseMs).then(
          (seq) => {
            if (seq === null) setLeader(false);
          },
          () => undefined, // the database is away: the steps report it
        );
        collectDone().catch(() => undefined);
        Promise.all([countOutbox(db), readOutbox(db, 1)]).then(
          ([pending, [oldest]]) => {
            metrics.changesPending.set(pending);
            metrics.changesLag.set(oldest ? Math.max(0, Date.now() - oldest.t.getTime()) / 1000 : 0);
          },
          () => undefined,
        );
      }, leaseMs / 3);
      renewer.unref();
      loop = run();
    },
    async stop() {
      stopping.abort();
      clearInterval(renewer);
      outboxSignals.off('done', onDone);
      // A step in flight (a send) gets a moment; what it leaves undone the next holder redoes.
      const finished = await Promise.race([loop?.then(() => true), pause(3000).then(() => false)]);
      if (producerConnected || !finished) await producer?.disconnect().catch(() => undefined);
      await Promise.race([loop, pause(2000)]);
      if (leader) await releaseLease(db, RELAY_LEASE, owner).catch(() => undefined);
      setLeader(false);
    },
    isLeader: () => leader,
  };
}
