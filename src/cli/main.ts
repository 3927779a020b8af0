import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Db } from 'mongodb';
import { ConfigError, loadCliConfig } from '../config';
import { runInChangeContext } from '../db/change-context';
import { connectWithin, createMongoClient } from '../db/client';
import { ensureIndexes } from '../db/collections';
import { Tenant } from '../db/tenant';
import { bringStoredDataCurrent, NewerStoredShape, type StoredShape, storedShape, UPGRADES } from '../db/upgrades';
import { configureHistoryBounds } from '../domain/arrivals';
import { reindexOrganization } from '../domain/list-facts';
import { createLogger, type Logger } from '../log';
import { exportConfiguration } from './export';
import { FatalImportError, importFiles } from './import';
import { ImportConfigError, importConfiguration } from './import-config';
import { runTopics } from './topics';

const USAGE = `usage:
  cag import [--users users.jsonl] [--courses courses.jsonl] [--concurrency N] [--strict]
  cag export --org ORG > config.json
  cag import-config --org ORG [--merge] config.json
  cag reindex --org ORG     (derive the list fields and search entries of every user and course again)
  cag upgrade               (run the pending upgrades of stored data, or wait for the process running them)
  cag topics [--create [--partitions N] [--replication-factor N]]
                            (print the Kafka topics and ACLs these settings need; --create: create the missing topics)
environment: MONGO_URL, MONGO_DB, LOG_LEVEL (as the service reads them); CAG_OPERATOR (else USER) names you in the audit log;
  CAG_UPGRADE_WAIT_SECONDS (120): how long \`cag upgrade\` waits for a database that does not answer yet;
  \`cag topics\` reads the service's KAFKA_* settings and CHANGES_TOPIC instead of the database's`;

/** Who runs `cag`, for the audit log: CAG_OPERATOR, else the login name; printable, bounded. */
function operatorName(env: NodeJS.ProcessEnv): string {
  const raw = env.CAG_OPERATOR || env.USER || env.LOGNAME || 'unknown';
  return raw.replace(/[^\w.@+-]/g, '_').slice(0, 100) || 'unknown';
}

export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/**
 * Runs one `cag` command and returns its exit code: 0 done, 1 fatal (unreadable file, database
 * down, invalid configuration), 2 usage, 3 `import --strict` with refused lines, 4 the database's
 * stored data is of a newer version's shape (this `cag` must not write to it).
 */
export async function runCli(argv: string[], io: CliIo = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  const [command, ...rest] = argv;
  // Asked for (as `docker run IMAGE --help` asks through the image's entrypoint): the usage, success.
  if (command === '--help' || command === '-h' || command === 'help') {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        users: { type: 'string' },
        courses: { type: 'string' },
        concurrency: { type: 'string' },
        strict: { type: 'boolean' },
        org: { type: 'string' },
        merge: { type: 'boolean' },
        create: { type: 'boolean' },
        partitions: { type: 'string' },
        'replication-factor': { type: 'string' },
      },
    });
  } catch (err) {
    io.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (
    !command ||
    !['import', 'export', 'import-config', 'reindex', 'upgrade', 'topics'].includes(command) ||
    (command !== 'import-config' && positionals.length > 0)
  ) {
    io.stderr.write(`${USAGE}\n`);
    return 2;
  }
  // Kafka only: no database, so it runs before one exists (a fresh install's Job, an operator's shell).
  if (command === 'topics') return runTopics(values, io);
  if ((command === 'export' || command === 'import-config' || command === 'reindex') && !values.org) {
    io.stderr.write(`--org is required\n${USAGE}\n`);
    return 2;
  }
  if (command === 'import-config' && positionals.length !== 1) {
    io.stderr.write(`give one config file\n${USAGE}\n`);
    return 2;
  }
  const concurrency = values.concurrency === undefined ? 16 : Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) {
    io.stderr.write(`--concurrency must be an integer from 1 to 256\n`);
    return 2;
  }

  let config;
  try {
    config = loadCliConfig(io.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const log = createLogger(config.LOG_LEVEL, io.stderr as never);
  configureHistoryBounds(config);
  const client = createMongoClient(config.MONGO_URL);
  // Every write of this run is the operator's and audited; the service's relay publishes it.
  const context = { cause: 'import' as const, actor: { type: 'cag' as const, operator: operatorName(io.env) }, requestId: `cag-${randomUUID()}`, audit: true };
  try {
    const db = client.db(config.MONGO_DB);
    // A Job started with the database (a fresh install) waits for it; an operator's command does not.
    if (command === 'upgrade') await connectWithin(client, config.CAG_UPGRADE_WAIT_SECONDS * 1000, log);
    await ensureIndexes(db);
    // Every command works on data of this version's shape: `upgrade` is only this step, reported.
    const ran = await bringStoredDataCurrent({ db, log, onWaiting: progressTo(io.stderr) });
    if (command === 'upgrade') {
      io.stderr.write(`${upgradeOutcome(await storedShape(db), ran)}\n`);
      return 0;
    }
    return await runInChangeContext(context, () => runCommand(db, command, values, positionals, concurrency, io, log));
  } catch (err) {
    if (err instanceof FatalImportError || err instanceof ImportConfigError) {
      io.stderr.write(`${err.message}\n`);
      return 1;
    }
    if (err instanceof NewerStoredShape) {
      io.stderr.write(`${err.message}; run the newer version's cag\n`);
      return 4;
    }
    log.error({ err }, `${command} failed`);
    return 1;
  } finally {
    await client.close();
  }
}

/** What `cag upgrade` did, in one line. */
function upgradeOutcome(stored: StoredShape, ran: boolean): string {
  if (ran) return 'stored data upgraded; it is current';
  // A rolled-back release's Job on a newer version's expand upgrades: nothing to do, and no failure to retry.
  if (stored.shape > UPGRADES.length) {
    return `stored data is of shape ${stored.shape}, newer than this version knows (${UPGRADES.length}), and this version still serves it (floor ${stored.floor}); nothing to upgrade`;
  }
  return 'stored data is current; nothing to upgrade';
}

/** Reports the upgrade's progress on stderr: every change of what it waits for, at most every 5 s. */
function progressTo(out: NodeJS.WritableStream): (reason: string | null) => void {
  let last = 0;
  let lastKind = '';
  return (reason) => {
    if (reason === null) return;
    const kind = reason.replace(/[\d,]+ of [\d,]+/, '');
    if (kind === lastKind && Date.now() - last < 5000) return;
    last = Date.now();
    lastKind = kind;
    out.write(`${reason}\n`);
  };
}

async function runCommand(
  db: Db,
  command: string,
  values: { users?: string; courses?: string; strict?: boolean; org?: string; merge?: boolean },
  positionals: string[],
  concurrency: number,
  io: CliIo,
  log: Logger,
): Promise<number> {
  if (command === 'import') {
    const summary = await importFiles(db, { users: values.users, courses: values.courses, concurrency, out: io.stderr });
    io.stderr.write(`read ${summary.read}, applied ${summary.applied}, unchanged ${summary.unchanged}, refused ${summary.refused}\n`);
    log.info({ summary }, 'import finished');
    return values.strict && summary.refused > 0 ? 3 : 0;
  }
  if (command === 'reindex') {
    const done = await reindexOrganization(new Tenant(db, values.org!));
    io.stderr.write(`reindexed ${done.users} users, ${done.courses} courses\n`);
    return 0;
  }
  if (command === 'export') {
    const document = await exportConfiguration(db, values.org!);
    io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
    return 0;
  }
  const report = await importConfiguration(db, values.org!, positionals[0]!, { merge: values.merge === true });
  io.stderr.write(`${JSON.stringify(report)}\n`);
  return 0;
}

// Run as a program (bin/cag.js or `node dist/src/cli/main.js`), not when a test imports it.
if (require.main === module) {
  runCli(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
