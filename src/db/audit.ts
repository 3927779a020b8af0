import type { Db } from 'mongodb';
import { type AuditDoc, COLLECTIONS } from './collections';
import { isDuplicateKey } from './errors';

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
    const errors = (err as { writeErrors?: { code: number }[] | { code: number } }).writeErrors;
    const list = errors === undefined ? [] : Array.isArray(errors) ? errors : [errors];
    if (!isDuplicateKey(err) || list.length === 0 || list.some((e) => e.code !== 11000)) throw err;
    return records.length - list.length;
  }
}

/** FerretDB says so in `buildInfo`; MongoDB has no such field. */
export async function isFerretDb(db: Db): Promise<boolean> {
  const info = await db.admin().command({ buildInfo: 1 });
  return typeof info.ferretdbVersion === 'string';
}

/**
 * Makes audit records expire after `days`. On MongoDB a TTL index on `time` does it (changed in
 * place when the retention changes). FerretDB v1.24 refuses `expireAfterSeconds` ("not
 * implemented"), so there the caller purges periodically: the answer says which.
 */
export async function setUpAuditRetention(db: Db, days: number): Promise<'ttl' | 'purge'> {
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
export async function purgeExpiredAudit(db: Db, days: number, now = Date.now()): Promise<number> {
  return (await auditLog(db).deleteMany({ time: { $lt: new Date(now - days * DAY_MS) } })).deletedCount;
}

/** How often the purge runs where there is no TTL index: records live at most this much longer than `days`. */
export const PURGE_EVERY_MS = 3_600_000;
