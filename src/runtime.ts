import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db, MongoClient } from 'mongodb';
import { type AvroDecoder, createAvroDecoder } from '../consumers/avro';
import { type BatchHandler, createBatchHandler } from '../consumers/batch';
import { createEventConsumer, type EventConsumer, type MessageHandler } from '../consumers/consumer';
import { createDispatcher } from '../consumers/dispatch';
import { createApp, createOperationsApp } from './app';
import { type ChangeRelay, createChangeRelay } from './changes/relay';
import type { Config } from './config';
import { ConfigError } from './config';
import { keepAuditRetention } from './db/audit-log';
import { createMongoClient, ping } from './db/client';
import { ensureIndexes } from './db/collections';
import { configureChanges } from './db/outbox';
import { bringStoredDataCurrent, NewerStoredShape, newerShapeReason, SHAPE_CHECK_MS, storedShape, UPGRADES, type Upgrade } from './db/upgrades';
import { configureHistoryBounds } from './domain/arrivals';
import { finishAbandonedWrites } from './domain/children';
import { finishAbandonedProjections, PROJECTION_LEASE_MS } from './domain/learners';
import { DependencyUnavailable } from './errors';
import { type DescribeFailure, failureReporter } from './failure-report';
import { brokerProbe, createKafka } from './kafka';
import type { Logger } from './log';
import { createMetrics, type Metrics } from './metrics';
import { registryClientSettings } from './registry-settings';
import { type RetryPolicy, retry, STARTUP_RETRY, within } from './retry';

/** How long an idle HTTP connection stays open (see `keepAliveTimeout` below). */
const KEEP_ALIVE_MS = 65_000;

export interface Running {
  db: Db;
  client: MongoClient;
  metrics: Metrics;
  /** Every role serves HTTP: the API (roles all and api), or only /healthz, /readyz and /metrics (consumer). */
  server: Server;
  port: number;
  consumer: EventConsumer | null;
  /** Publishes change events and writes audit records (every role runs one; one per database leads). */
  relay: ChangeRelay;
  /** Resolves once the database is connected, indexes exist, stored data is upgraded and the consumer (if any) runs. */
  ready: Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

/** How long connections already open may still bring a request after shutdown begins. */
const DRAIN_GRACE_MS = 1000;
/** After this, connections still busy are cut so the process exits within the 10 s docs/operations.md promises. */
const DRAIN_LIMIT_MS = 7000;
/** Each dependency's answer to /readyz, checked in parallel: docs/operations.md promises the answer within 3 s. */
const PROBE_MS = 2000;

/**
 * Closes an HTTP server gracefully. Node's close() stops accepting connections but also destroys
 * idle keep-alive sockets at once, so a request a client has just written on a reused socket is
 * reset. Instead: stop accepting, keep idle sockets for a short grace (the app answers on them
 * with `Connection: close`), then close what is idle and wait for what is in flight. With no
 * connection open there is nothing to wait for.
 */
async function closeGracefully(server: Server): Promise<void> {
  const closeIdle = server.closeIdleConnections.bind(server);
  server.closeIdleConnections = () => undefined;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // No connection open: none can bring a request, so no grace to wait.
  const open = await new Promise<number>((resolve) => server.getConnections((err, n) => resolve(err ? 1 : n)));
  if (open > 0) await sleep(DRAIN_GRACE_MS);
  closeIdle();
  const cut = setTimeout(() => server.closeAllConnections(), DRAIN_LIMIT_MS - DRAIN_GRACE_MS);
  await closed;
  clearTimeout(cut);
}

/** Start-up's handling of stored-data upgrades (src/db/upgrades.ts); tests shorten the times or give another version's upgrades. */
export interface UpgradeOptions {
  upgrades?: readonly Upgrade[];
  leaseMs?: number;
  pollMs?: number;
  settleMs?: number;
  /** How often a running process reads the stored shape, to stop writing when a newer version upgrades it. */
  shapeCheckMs?: number;
  afterBatch?: Parameters<typeof bringStoredDataCurrent>[0]['afterBatch'];
}

/**
 * Runs `step` until it succeeds, with the service's backoff: a service started before its
 * database or broker waits for them (logging each try) instead of exiting.
 */
function withRetry(what: string, step: () => Promise<void>, log: Logger, signal: AbortSignal, describe?: DescribeFailure): Promise<void> {
  return retry(step, { policy: STARTUP_RETRY, signal, onFailure: failureReporter(what, log, describe) });
}

/**
 * Starts what `SERVICE_ROLE` asks for: the API, the consumer, or both. Every role listens on
 * `PORT` at once (a consumer serves only /healthz, /readyz and /metrics), so probes answer while
 * the database and the consumer are brought up in the background. `handle` overrides the
 * consumer's message handler (tests).
 */
export async function startService(
  config: Config,
  log: Logger,
  opts: { handle?: MessageHandler; handleBatch?: BatchHandler; signal?: AbortSignal; retry?: RetryPolicy; upgrade?: UpgradeOptions } = {},
): Promise<Running> {
  const metrics = createMetrics();
  configureHistoryBounds(config);
  const client = createMongoClient(config.MONGO_URL);
  const db = client.db(config.MONGO_DB);
  // A new client for each consumer start and relay producer: TLS files and the SASL password are read again.
  const newKafka = () => createKafka(config, log);
  const broker = brokerProbe(config, log, { timeoutMs: PROBE_MS });
  const stopping = new AbortController();
  opts.signal?.addEventListener('abort', () => stopping.abort());
  let started = false;
  let draining = false;
  const upgradeOpts = opts.upgrade ?? {};
  const upgrades = upgradeOpts.upgrades ?? UPGRADES;
  /**
   * Why this process neither serves the API nor consumes yet (null: it may): stored data not yet
   * known to be in this version's shape, an upgrade under way, or a newer version's shape.
   */
  let storedData: string | null = 'stored data not checked yet';

  let consumer: EventConsumer | null = null;
  // Only a consumer reads Avro, and only it depends on the registry (for /readyz too).
  let avro: AvroDecoder | null = null;
  if (config.SERVICE_ROLE !== 'api') {
    // TLS files and the password file are read again when they change (src/registry-settings.ts).
    const registry = registryClientSettings(config);
    if (registry) avro = createAvroDecoder(registry);
    const door = { db, log, metrics, defaultOrganization: config.DEFAULT_ORGANIZATION ?? null, avro };
    // A test's own handler gets every message alone, unless the test gives a batch handler too.
    const handle: MessageHandler = opts.handle ?? createDispatcher(door);
    const handleBatch = opts.handleBatch ?? (opts.handle ? undefined : createBatchHandler(door));
    consumer = createEventConsumer({ kafka: newKafka, config, log, handle, handleBatch, metrics, retry: opts.retry });
  }

  const events = config.CHANGES_TOPIC !== '';
  const audit = config.AUDIT_LOG === 'on';
  configureChanges(db, { events, audit });
  const relay = createChangeRelay({
    db,
    kafka: events ? newKafka : null,
    topic: events ? config.CHANGES_TOPIC : null,
    audit,
    log: log.child({ component: 'change-relay' }),
    metrics,
    leaseMs: config.CHANGE_RELAY_LEASE_MS,
  });

  const notReady = async (): Promise<string[]> => {
    const [dbOk, brokerOk, registryOk] = await Promise.all([
      within(
        ping(db).then(
          () => true,
          () => false,
        ),
        PROBE_MS,
        false,
      ),
      // Only a consuming process needs the broker (SPEC §6): an API-only process stays ready
      // through a broker outage, its change events waiting in the outbox.
      consumer ? broker.reachable() : true,
      avro ? within(avro.reachable(), PROBE_MS, false) : true,
    ]);
    const failing: string[] = [];
    if (draining) failing.push('shutting down');
    if (!dbOk) failing.push('database');
    if (!brokerOk) failing.push('broker');
    if (!registryOk) failing.push('schema registry');
    // Ready means serving: never before the stored data is known to be in this version's shape
    // (with the database away, "database" says why already).
    if (storedData !== null && dbOk) failing.push(storedData);
    // Not yet started means waiting for the database or the broker; once started, a message
    // being retried shows in the metrics and the error log, never here (SPEC §5), but a consumer
    // that crashed does (it consumes nothing until its restart fetches again).
    if (consumer && (!started || consumer.crashed() !== null)) failing.push('consumer');
    return failing;
  };
  // Why the broker is failing, when it says (a setting to fix), for /readyz's detail.
  const notReadyReasons = (): Record<string, string> => {
    const why = consumer ? broker.why() : null;
    const crashed = consumer?.crashed();
    return { ...(why?.setting ? { broker: why.reason } : {}), ...(crashed ? { consumer: crashed } : {}) };
  };

  const deps = { config, log, db, metrics, notReady, notReadyReasons, isDraining: () => draining, notServing: () => storedData };
  const app = config.SERVICE_ROLE === 'consumer' ? createOperationsApp(deps) : createApp(deps);
  const server = app.listen(config.PORT, '0.0.0.0');
  // An idle connection stays open longer than a proxy in front keeps one (60 s for nginx's
  // upstream keepalive and AWS's load balancers): closed by us first, a proxy's request sent at
  // that moment fails (a 502). Node's default is 5 s. Headers may take as long.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
  } catch (err) {
    await client.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      throw new ConfigError(`Invalid configuration: PORT: ${config.PORT} ${code === 'EADDRINUSE' ? 'is already in use' : 'may not be opened by this user'}`);
    }
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  log.info({ port, role: config.SERVICE_ROLE }, 'listening');

  const ready = (async () => {
    await withRetry(
      'database',
      async () => {
        await client.connect();
        await ensureIndexes(db);
      },
      log,
      stopping.signal,
    );
    // A stop during a step leaves the rest undone (kafkajs and the driver cannot be interrupted).
    stopping.signal.throwIfAborted();
    // Upgrades run once per database: here, or in the process that holds their lease (or `cag
    // upgrade`) while this one waits, not ready and saying why.
    const found: { newer: string | null } = { newer: null };
    await withRetry(
      'database (stored-data upgrade)',
      async () => {
        try {
          await bringStoredDataCurrent({ db, log, upgrades, ...upgradeOpts, signal: stopping.signal, onWaiting: (reason) => (storedData = reason) });
        } catch (err) {
          if (!(err instanceof NewerStoredShape)) throw err;
          found.newer = err.message;
        }
      },
      log,
      stopping.signal,
    );
    if (found.newer !== null) {
      // Never writes: it waits, not ready, to be replaced by the newer version.
      log.error({ known: upgrades.length }, `${found.newer}; this process will not serve or consume`);
      await new Promise((resolve) => stopping.signal.addEventListener('abort', resolve, { once: true }));
      stopping.signal.throwIfAborted();
    }
    storedData = null;
    watchShape();
    relay.start();
    await keepAuditRetention(db, config.AUDIT_RETENTION_DAYS, log, stopping.signal);
    keepFinishingProjections(db, log, stopping.signal);
    // The broker is waited for with the probe, which a stop interrupts at once; kafkajs's own
    // connection retries (about a minute) would hold a stop up until they end.
    if (consumer) {
      await withRetry(
        'broker',
        async () => {
          if (!(await broker.reachable())) throw new DependencyUnavailable('broker', broker.failure());
          stopping.signal.throwIfAborted();
          if (storedData !== null) return; // a newer version's shape came meanwhile: never consume
          await consumer!.start();
        },
        log,
        stopping.signal,
        () => broker.why(),
      );
    }
    stopping.signal.throwIfAborted();
    started = true;
  })();
  ready.catch(() => undefined); // only rejects when stopped before it finished

  /**
   * A newer version may upgrade the stored data while this process runs: from the first pass of a
   * contract upgrade on (a floor above this version), this process stops consuming and relaying
   * and refuses the API (not ready, saying why), so it leaves no record of the old shape after
   * that upgrade. The upgrade waits for it (settleMs). An expand upgrade leaves it serving.
   */
  let shapeWatch: NodeJS.Timeout | undefined;
  function watchShape() {
    shapeWatch = setInterval(() => {
      storedShape(db).then(
        (shape) => {
          const reason = newerShapeReason(shape, upgrades.length);
          if (!reason || storedData !== null || draining) return;
          storedData = reason;
          clearInterval(shapeWatch);
          log.error({ known: upgrades.length, ...shape }, `${reason}; this process stops serving and consuming`);
          consumer?.stop().catch(() => undefined);
          relay.stop().catch(() => undefined);
        },
        () => undefined, // the database is away: /readyz says so
      );
    }, upgradeOpts.shapeCheckMs ?? SHAPE_CHECK_MS);
    shapeWatch.unref();
  }

  return {
    db,
    client,
    metrics,
    server,
    port,
    consumer,
    relay,
    ready,
    /** Stop taking requests and messages, finish what is in flight, commit, close. */
    async stop() {
      stopping.abort();
      draining = true;
      clearInterval(shapeWatch);
      // A consumer still joining its group when the stop came is left to end with the process
      // (it has handled nothing, so there is nothing to commit) rather than hold the exit up.
      const consumerStopped = consumer
        ? within(
            consumer.stop().then(() => true),
            DRAIN_LIMIT_MS,
            false,
          )
        : true;
      const [, stopped] = await Promise.all([closeGracefully(server), consumerStopped]);
      if (!stopped) log.warn(`consumer not stopped within ${DRAIN_LIMIT_MS} ms; not waited for`);
      // After the doors: what they wrote last is relayed now or by the next lease holder.
      await relay.stop();
      await broker.close();
      await client.close();
    },
  };
}

/**
 * Every process sweeps, once a lease: a learner's projection that a dead process left marked is
 * finished (src/domain/learners.ts), and a child it left unsettled, or a group's deletion it left
 * half swept, is finished (src/domain/children.ts). Failures are logged and tried at the next sweep.
 */
function keepFinishingProjections(db: Db, log: Logger, signal: AbortSignal): void {
  const finish = (what: 'learners' | 'writes', run: () => Promise<number>) =>
    run().then(
      (n) => n > 0 && log.info({ [what]: n }, 'finished writes a stopped process left'),
      (err: Error) => log.warn({ err: { name: err.name, message: err.message }, what }, 'sweep failed'),
    );
  const sweep = () => Promise.all([finish('learners', () => finishAbandonedProjections(db)), finish('writes', () => finishAbandonedWrites(db))]);
  const timer = setInterval(sweep, PROJECTION_LEASE_MS / 2);
  timer.unref();
  signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}
