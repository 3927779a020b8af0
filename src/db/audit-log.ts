import type { Db } from 'mongodb';
import type { Logger } from '../log';
import { type AuditDoc, COLLECTIONS } from './collections';
import { isFerretDb, refusedAsDuplicates } from './dialect';

const auditLog = (db: Db) => db.collection<AuditDoc>(COLLECTIONS.auditLog);
const DAY_MS = 86_400_000;

/**
 * Adds audit records. A record's `_id` is its change's (intent and record), so a relay that
 * resolves the same intent again after a crash adds nothing twice. Returns how many were new.
 */
export async function insertAuditRecords(db: Db, records: AuditDoc[]): Promise<number> {
  if (records.length === 0) return 0;
  try {
    return (await auditLog(db).insertMany(records, { ordered: false })).insertedCount;
  } catch (err) {
    const refused = refusedAsDuplicates(err);
    if (!refused) throw err;
    return records.length - refused.length;
  }
}

/**
 * Makes audit records expire after `days`. On MongoDB a TTL index on `time` does it (changed in
 * place when the retention changes). FerretDB v1.24 refuses `expireAfterSeconds` ("not
 * implemented"), so there the caller purges periodically: the answer says which.
 */
async function setUpAuditRetention(db: Db, days: number): Promise<'ttl' | 'purge'> {
  if (await isFerretDb(db)) return 'purge';
  const expireAfterSeconds = days * 86_400;
  try {
    await auditLog(db).createIndex({ time: 1 }, { name: 'audit_ttl', expireAfterSeconds });
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code !== 85 && code !== 86) throw err; // IndexOptionsConflict: another retention before
    await db.command({ collMod: COLLECTIONS.auditLog, index: { name: 'audit_ttl', expireAfterSeconds } });
  }
  return 'ttl';
}

/** Deletes the audit records older than `days` (what the TTL index does on MongoDB); returns how many. */
async function purgeExpiredAudit(db: Db, days: number, now = Date.now()): Promise<number> {
  return (await auditLog(db).deleteMany({ time: { $lt: new Date(now - days * DAY_MS) } })).deletedCount;
}

/** How often the purge runs where there is no TTL index: records live at most this much longer than `days`. */
const PURGE_EVERY_MS = 3_600_000;

/**
 * Keeps audit records for `days` until `signal` aborts: a TTL index where the server has one,
 * else a purge now and every PURGE_EVERY_MS. Failures are logged, never thrown: the trail is
 * still written, records just live longer.
 */
export async function keepAuditRetention(db: Db, days: number, log: Pick<Logger, 'warn'>, signal: AbortSignal): Promise<void> {
  const warn = (what: string) => (err: Error) => log.warn({ err: { name: err.name, message: err.message } }, what);
  try {
    if ((await setUpAuditRetention(db, days)) === 'ttl') return;
  } catch (err) {
    warn('audit retention not set up')(err as Error);
    return;
  }
  const purge = () => purgeExpiredAudit(db, days).catch(warn('audit purge failed'));
  await purge();
  if (signal.aborted) return;
  const timer = setInterval(purge, PURGE_EVERY_MS);
  timer.unref();
  signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}
