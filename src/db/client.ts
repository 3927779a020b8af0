import { type Db, MongoClient, type MongoClientOptions } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import type { Logger } from '../log';
import { retry, STARTUP_RETRY } from '../retry';
import { isDatabaseUnavailable } from './driver-errors';
import { refreshingSecureContext } from './tls-files';

/**
 * The service's defaults, each used only when MONGO_URL does not name the option (the driver lets
 * an option given in code beat the URL's). Short server-selection and connect timeouts make a
 * query against an unreachable database fail in about two seconds, so the API can answer 503
 * within the 3 s docs/operations.md promises; the driver reconnects by itself when the server
 * returns.
 */
export const MONGO_DEFAULTS = {
  serverSelectionTimeoutMS: 2000,
  connectTimeoutMS: 2000,
  socketTimeoutMS: 10000,
  maxPoolSize: 50,
  appName: 'course-access-groups',
} as const satisfies MongoClientOptions;

/** The options MONGO_URL names, lower-cased (the driver reads them case-insensitively), parsed as the driver parses the URL. */
function optionsNamedIn(url: string): Set<string> {
  return new Set([...new ConnectionString(url).searchParams.keys()].map((name) => name.toLowerCase()));
}

export function createMongoClient(url: string): MongoClient {
  const named = optionsNamedIn(url);
  const defaults = Object.entries(MONGO_DEFAULTS).filter(([name]) => !named.has(name.toLowerCase()));
  const client = new MongoClient(url, Object.fromEntries(defaults));
  // TLS files read again when they change (src/db/tls-files.ts): the driver reads them once.
  const secureContext = client.options.tls ? refreshingSecureContext(client.options) : null;
  return secureContext ? new MongoClient(url, { ...Object.fromEntries(defaults), secureContext }) : client;
}

export async function ping(db: Db): Promise<void> {
  await db.command({ ping: 1 }, { timeoutMS: 2000 });
}

/**
 * Connects, waiting up to `waitMs` for a database that does not answer yet (each try about 2 s,
 * the server-selection timeout, then the backoff): a job started with the database, as a fresh
 * GitOps install starts them, succeeds once it is up. After `waitMs` the last error is thrown;
 * any other failure (a refused password, a bad URL) at once.
 */
export async function connectWithin(client: MongoClient, waitMs: number, log: Logger): Promise<void> {
  const deadline = Date.now() + waitMs;
  await retry(() => client.connect().then(() => undefined), {
    policy: STARTUP_RETRY,
    // A timer that keeps the process alive: in `cag` nothing else does while it waits.
    wait: (ms) => new Promise((resolve) => setTimeout(() => resolve(true), ms)),
    onFailure: (err, attempt, delayMs) => {
      if (!isDatabaseUnavailable(err) || Date.now() + delayMs > deadline) return false;
      log.warn({ attempt, delay_ms: delayMs, err: { name: (err as Error).name, message: (err as Error).message } }, 'database not reachable yet; retrying');
    },
  });
}
