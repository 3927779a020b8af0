import type { Db } from 'mongodb';
import { isDuplicateKey } from './driver-errors';

/**
 * Everything that differs between the servers the driver may talk to: MongoDB and FerretDB v1
 * on SQLite (the local stack, docs/local-stack.md). Code outside src/db/ asks these questions
 * through the Tenant and never learns which server answers. Each difference, with why:
 */

/** Whether the server is FerretDB: it says so in `buildInfo`, MongoDB has no such field. Asked once per database handle. */
const serverByDb = new WeakMap<Db, Promise<boolean>>();
export function isFerretDb(db: Db): Promise<boolean> {
  let known = serverByDb.get(db);
  if (!known) {
    known = db
      .admin()
      .command({ buildInfo: 1 })
      .then((info) => typeof info.ferretdbVersion === 'string');
    known.catch(() => serverByDb.delete(db)); // ask again once the server answers
    serverByDb.set(db, known);
  }
  return known;
}

/**
 * How a count is taken: FerretDB answers the `count` command from its index (patch 0004) when it
 * pushes that command's filter down to SQL, and reads every match for countDocuments (an
 * aggregate); MongoDB answers countDocuments from the index alone (COUNT_SCAN) when the index
 * covers the filter. Asked once per collection (FerretDB plans nothing for one not created yet).
 */
const countingByDb = new WeakMap<Db, Map<string, Promise<'command' | 'aggregate'>>>();
export function countingWay(db: Db, collection: string): Promise<'command' | 'aggregate'> {
  let known = countingByDb.get(db);
  if (!known) {
    known = new Map();
    countingByDb.set(db, known);
  }
  let way = known.get(collection);
  if (!way) {
    way = (async () => {
      if (!(await isFerretDb(db))) return 'aggregate' as const;
      const plan = await db.command({ explain: { count: collection, query: { _id: '' } } });
      return plan.filterPushdown === true ? ('command' as const) : ('aggregate' as const);
    })();
    way.catch(() => known.delete(collection)); // ask again once the server answers
    known.set(collection, way);
  }
  return way;
}

/**
 * Values per `$in`: the patched FerretDB turns an `$in` of at most 1000 values into an indexed
 * SQL lookup, and a longer one into a scan of the whole table (seconds at 40,000 rows).
 */
export const IN_LIMIT = 1000;

/**
 * Update statements per bulk command: FerretDB v1.24 (patched, on SQLite) never answers an
 * `update` command of 100 statements or more, and the database it aimed at stays locked until
 * FerretDB restarts (measured: 64 and 99 answer in under 100 ms, 100 hangs). MongoDB takes
 * 100,000; pieces of 64 cost it nothing.
 */
export const UPDATES_PER_COMMAND = 64;

/** The documents `read` finds for `values`, asking at most IN_LIMIT values at a time. */
export async function readInPieces<V, D>(values: readonly V[], read: (piece: V[]) => Promise<D[]>): Promise<D[]> {
  const pieces: Promise<D[]>[] = [];
  for (let i = 0; i < values.length; i += IN_LIMIT) pieces.push(read(values.slice(i, i + IN_LIMIT)));
  return (await Promise.all(pieces)).flat();
}

/**
 * The indexes (in the batch) of the writes an unordered bulk write refused as duplicates, when
 * duplicates are all it refused; null when it failed otherwise. The driver reports `writeErrors`
 * as an array from MongoDB and as a single error object from FerretDB.
 */
export function refusedAsDuplicates(err: unknown): number[] | null {
  if (!isDuplicateKey(err)) return null;
  const writeErrors = (err as { writeErrors?: { code: number; index: number }[] | { code: number; index: number } }).writeErrors;
  const errors = writeErrors === undefined ? [] : Array.isArray(writeErrors) ? writeErrors : [writeErrors];
  if (errors.length === 0 || errors.some((e) => e.code !== 11000)) return null;
  return errors.map((e) => e.index);
}

/** Ids in list order, as MongoDB sorts them (and FerretDB with patch 0004): numbers numerically, strings by their UTF-8 bytes. */
export function compareIds(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
}

/**
 * `docs` in `id` order, sorted here rather than by the server, for a read whose filter selects a
 * few documents through an index of its own (an email, the links of a page of courses): asked to
 * sort as well, SQLite serves the sort's index (`{org, id}`) instead and reads the organization.
 */
export function sortedHere<D extends { id: number | string }>(docs: D[]): D[] {
  return docs.sort((a, b) => compareIds(a.id, b.id));
}
