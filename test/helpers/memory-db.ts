import { isDeepStrictEqual } from 'node:util';
import { find as mingoFind, update as mingoUpdate, Query } from 'mingo';
import { type Db, type Document, type IndexDescription, MongoBulkWriteError, MongoServerError, ObjectId } from 'mongodb';

/**
 * An in-memory stand-in for the part of the driver's `Db`/`Collection` that src/db calls, so the
 * domain functions (src/domain) run for real over `new Tenant(memoryDb(), org)` without a
 * database: unit tests of domain rules in seconds (test/unit/domain-*.test.ts).
 *
 * Matching, projection, sorting and the update operators are mingo's (the MongoDB query language
 * for plain objects); this file adds what the domain relies on beyond them: `_id` and unique
 * indexes refusing a write with E11000, as a `MongoServerError` (a `MongoBulkWriteError` with
 * `writeErrors` from insertMany and bulkWrite) so `isDuplicateKey` reads it as the driver's;
 * upserts that insert the filter's equalities plus `$setOnInsert`; modified counts that say
 * whether a document really changed. Each operation runs to its end before it returns its
 * promise: atomic, as a single-document write is on the server. Documents go in and out as
 * copies. Anything else the driver offers is absent here and fails loudly (not a function).
 */

type Doc = Document;
type Update = Record<string, Document | undefined>;

/** Plain objects and arrays copied; Dates too; other values (ObjectId, numbers, ...) as they are. */
function copy<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copy) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copy(v)])) as T;
  }
  return value;
}

const keyOf = (id: unknown) => (id instanceof ObjectId ? `oid:${id.toHexString()}` : `${typeof id}:${JSON.stringify(id)}`);

const isOperatorObject = (v: unknown) =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) && Object.keys(v).some((k) => k.startsWith('$'));

interface UniqueIndex {
  name: string;
  fields: string[];
}

/** The driver's E11000 for a single-document write. */
function duplicateKey(db: string, collection: string, index: UniqueIndex, doc: Doc): MongoServerError {
  const keyValue = Object.fromEntries(index.fields.map((f) => [f, fieldValue(doc, f)]));
  const errmsg = `E11000 duplicate key error collection: ${db}.${collection} index: ${index.name} dup key: ${JSON.stringify(keyValue)}`;
  return new MongoServerError({
    message: errmsg,
    errmsg,
    code: 11000,
    codeName: 'DuplicateKey',
    keyPattern: Object.fromEntries(index.fields.map((f) => [f, 1])),
    keyValue,
  });
}

function fieldValue(doc: Doc, path: string): unknown {
  let v: unknown = doc;
  for (const part of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Doc)[part] : undefined;
  return v === undefined ? null : v; // a unique index keys a missing field as null
}

/** What `find` returns: the query runs when the cursor is read, as the driver's does. */
class MemoryCursor {
  private sortSpec?: Record<string, 1 | -1>;
  private skipCount = 0;
  private limitCount = 0;

  constructor(
    private readonly read: () => Doc[],
    private readonly projection?: Doc,
  ) {}

  sort(spec: Record<string, 1 | -1>) {
    this.sortSpec = spec;
    return this;
  }
  skip(n: number) {
    this.skipCount = n;
    return this;
  }
  limit(n: number) {
    this.limitCount = n;
    return this;
  }

  async toArray(): Promise<Doc[]> {
    let cursor = mingoFind(this.read(), {}, this.projection && Object.keys(this.projection).length > 0 ? this.projection : undefined);
    if (this.sortSpec) cursor = cursor.sort(this.sortSpec);
    if (this.skipCount > 0) cursor = cursor.skip(this.skipCount);
    if (this.limitCount > 0) cursor = cursor.limit(this.limitCount);
    return (cursor.all() as Doc[]).map(copy);
  }
}

interface UpdateOptions {
  upsert?: boolean;
}

interface WriteOutcome {
  matched: number;
  modified: number;
  upsertedId: unknown;
  /** The document as it is after the write (the first one), and before it. */
  after: Doc | null;
  before: Doc | null;
}

class MemoryCollection {
  /** By `_id` (see keyOf), in insertion order: the "natural order" of an unsorted find. */
  private readonly docs = new Map<string, Doc>();
  private readonly unique: UniqueIndex[] = [];

  constructor(
    private readonly dbName: string,
    readonly collectionName: string,
  ) {}

  private matching(filter: Doc = {}): Doc[] {
    const query = new Query(filter);
    return [...this.docs.values()].filter((d) => query.test(d));
  }

  /** Refuses `doc` (new, or the new version of the document of `_id` `self`) if a key it needs is taken. */
  private checkKeys(doc: Doc, self: string | null): void {
    const key = keyOf(doc._id);
    if (key !== self && this.docs.has(key)) throw duplicateKey(this.dbName, this.collectionName, { name: '_id_', fields: ['_id'] }, doc);
    for (const index of this.unique) {
      const value = index.fields.map((f) => fieldValue(doc, f));
      for (const [k, other] of this.docs) {
        if (
          k !== self &&
          isDeepStrictEqual(
            index.fields.map((f) => fieldValue(other, f)),
            value,
          )
        ) {
          throw duplicateKey(this.dbName, this.collectionName, index, doc);
        }
      }
    }
  }

  private insert(doc: Doc): Doc {
    const stored = copy(doc);
    if (stored._id === undefined) {
      stored._id = new ObjectId();
      doc._id = stored._id; // the driver sets it on the caller's document too
    }
    this.checkKeys(stored, null);
    this.docs.set(keyOf(stored._id), stored);
    return stored;
  }

  /** Applies an update document to a copy of `doc`; `inserting` also applies `$setOnInsert`. */
  private static applied(doc: Doc, update: Update, inserting: boolean): Doc {
    const ops = Object.keys(update);
    if (ops.length === 0 || ops.some((op) => !op.startsWith('$'))) throw new Error('memory db: only update operators are supported');
    const { $setOnInsert, ...rest } = update;
    const modifier = inserting && $setOnInsert ? { ...rest, $set: { ...rest.$set, ...$setOnInsert } } : rest;
    const next = copy(doc);
    if (Object.keys(modifier).length > 0) mingoUpdate(next, copy(modifier));
    if (!inserting && keyOf(next._id) !== keyOf(doc._id)) {
      throw new MongoServerError({ message: "Performing an update on the path '_id' would modify the immutable field '_id'", code: 66 });
    }
    return next;
  }

  /** updateOne/updateMany/findOneAndUpdate: the matches (one unless `many`), or an upsert when none. */
  private update(filter: Doc, update: Update, options: UpdateOptions, many: boolean): WriteOutcome {
    const matches = this.matching(filter);
    const targets = many ? matches : matches.slice(0, 1);
    if (targets.length === 0) {
      if (!options.upsert) return { matched: 0, modified: 0, upsertedId: null, after: null, before: null };
      // The new document starts from the filter's equalities (`{_id: x, t: {$lt: y}}` gives `{_id: x}`).
      const base = Object.fromEntries(Object.entries(filter).filter(([k, v]) => !k.startsWith('$') && !isOperatorObject(v)));
      const doc = this.insert(MemoryCollection.applied(copy(base), update, true));
      return { matched: 0, modified: 0, upsertedId: doc._id, after: doc, before: null };
    }
    let modified = 0;
    let first: { before: Doc; after: Doc } | null = null;
    for (const before of targets) {
      const after = MemoryCollection.applied(before, update, false);
      if (!isDeepStrictEqual(after, before)) {
        const key = keyOf(before._id);
        this.checkKeys(after, key);
        this.docs.set(key, after);
        modified++;
      }
      first ??= { before, after };
    }
    return { matched: targets.length, modified, upsertedId: null, after: first!.after, before: first!.before };
  }

  private static result(o: WriteOutcome) {
    return { acknowledged: true, matchedCount: o.matched, modifiedCount: o.modified, upsertedCount: o.upsertedId === null ? 0 : 1, upsertedId: o.upsertedId };
  }

  private remove(filter: Doc, many: boolean): Doc[] {
    const matches = this.matching(filter);
    const gone = many ? matches : matches.slice(0, 1);
    for (const d of gone) this.docs.delete(keyOf(d._id));
    return gone;
  }

  private static projected(doc: Doc | null, projection?: Doc): Doc | null {
    if (!doc) return null;
    if (!projection || Object.keys(projection).length === 0) return copy(doc);
    return copy(mingoFind([doc], {}, projection).all()[0] as Doc);
  }

  find(filter: Doc = {}, options: { projection?: Doc; sort?: Record<string, 1 | -1>; skip?: number; limit?: number } = {}) {
    const cursor = new MemoryCursor(() => this.matching(filter), options.projection);
    if (options.sort) cursor.sort(options.sort);
    if (options.skip) cursor.skip(options.skip);
    if (options.limit) cursor.limit(options.limit);
    return cursor;
  }

  async findOne(filter: Doc = {}, options: { projection?: Doc; sort?: Record<string, 1 | -1> } = {}) {
    return (await this.find(filter, { ...options, limit: 1 }).toArray())[0] ?? null;
  }

  async countDocuments(filter: Doc = {}, options: { skip?: number; limit?: number } = {}) {
    const n = Math.max(0, this.matching(filter).length - (options.skip ?? 0));
    return options.limit ? Math.min(n, options.limit) : n;
  }

  async insertOne(doc: Doc) {
    return { acknowledged: true, insertedId: this.insert(doc)._id };
  }

  /** Ordered (the default) stops at the first refused document; `ordered: false` goes on. Either way every refusal is a write error. */
  async insertMany(docs: Doc[], options: { ordered?: boolean } = {}) {
    const insertedIds: Record<number, unknown> = {};
    const writeErrors: { code: number; index: number; errmsg: string; keyValue?: unknown }[] = [];
    for (const [index, doc] of docs.entries()) {
      try {
        insertedIds[index] = this.insert(doc)._id;
      } catch (err) {
        if (!(err instanceof MongoServerError)) throw err;
        writeErrors.push({ code: err.code as number, index, errmsg: err.message, keyValue: err.keyValue });
        if (options.ordered !== false) break;
      }
    }
    const insertedCount = Object.keys(insertedIds).length;
    if (writeErrors.length > 0) throw bulkError(writeErrors, { insertedCount, insertedIds });
    return { acknowledged: true, insertedCount, insertedIds };
  }

  async updateOne(filter: Doc, update: Update, options: UpdateOptions = {}) {
    return MemoryCollection.result(this.update(filter, update, options, false));
  }

  async updateMany(filter: Doc, update: Update, options: UpdateOptions = {}) {
    return MemoryCollection.result(this.update(filter, update, options, true));
  }

  async findOneAndUpdate(
    filter: Doc,
    update: Update,
    options: UpdateOptions & { returnDocument?: 'before' | 'after'; projection?: Doc; includeResultMetadata?: boolean } = {},
  ) {
    const o = this.update(filter, update, options, false);
    const value = MemoryCollection.projected(options.returnDocument === 'after' ? o.after : o.before, options.projection);
    if (!options.includeResultMetadata) return value;
    const updatedExisting = o.matched > 0;
    return {
      ok: 1,
      value,
      lastErrorObject: { n: updatedExisting || o.upsertedId !== null ? 1 : 0, updatedExisting, ...(o.upsertedId !== null ? { upserted: o.upsertedId } : {}) },
    };
  }

  async findOneAndDelete(filter: Doc) {
    return MemoryCollection.projected(this.remove(filter, false)[0] ?? null);
  }

  async deleteOne(filter: Doc = {}) {
    return { acknowledged: true, deletedCount: this.remove(filter, false).length };
  }

  async deleteMany(filter: Doc = {}) {
    return { acknowledged: true, deletedCount: this.remove(filter, true).length };
  }

  /** Only the `updateOne` operation, the one src/db sends (TenantCollection.upsertEach). */
  async bulkWrite(ops: { updateOne?: { filter: Doc; update: Update; upsert?: boolean } }[], options: { ordered?: boolean } = {}) {
    let matchedCount = 0;
    let modifiedCount = 0;
    const upsertedIds: Record<number, unknown> = {};
    const writeErrors: { code: number; index: number; errmsg: string }[] = [];
    for (const [index, op] of ops.entries()) {
      if (!op.updateOne) throw new Error(`memory db: bulkWrite supports updateOne only, not ${Object.keys(op).join()}`);
      try {
        const o = this.update(op.updateOne.filter, op.updateOne.update, { upsert: op.updateOne.upsert }, false);
        matchedCount += o.matched;
        modifiedCount += o.modified;
        if (o.upsertedId !== null) upsertedIds[index] = o.upsertedId;
      } catch (err) {
        if (!(err instanceof MongoServerError)) throw err;
        writeErrors.push({ code: err.code as number, index, errmsg: err.message });
        if (options.ordered !== false) break;
      }
    }
    const result = {
      ok: 1,
      insertedCount: 0,
      matchedCount,
      modifiedCount,
      deletedCount: 0,
      upsertedCount: Object.keys(upsertedIds).length,
      upsertedIds,
      insertedIds: {},
    };
    if (writeErrors.length > 0) throw bulkError(writeErrors, result);
    return result;
  }

  /** Records unique indexes, which every later write then respects; others are only named. */
  async createIndex(key: Record<string, 1 | -1>, options: { unique?: boolean; name?: string } = {}): Promise<string> {
    const fields = Object.keys(key);
    const name = options.name ?? fields.map((f) => `${f}_${key[f]}`).join('_');
    if (options.unique && !this.unique.some((i) => i.name === name)) this.unique.push({ name, fields });
    return name;
  }

  /** The indexes it keeps: the unique ones (all ascending, as the service's are). */
  async indexes(): Promise<{ name: string; key: Record<string, 1>; unique: true }[]> {
    return this.unique.map(({ name, fields }) => ({ name, key: Object.fromEntries(fields.map((f) => [f, 1 as const])), unique: true as const }));
  }

  async createIndexes(indexes: IndexDescription[]): Promise<string[]> {
    const names: string[] = [];
    for (const { key, ...options } of indexes)
      names.push(await this.createIndex(key as Record<string, 1 | -1>, options as { unique?: boolean; name?: string }));
    return names;
  }
}

/** The driver's error for a bulk write (insertMany, bulkWrite) with refused documents: a MongoServerError with `writeErrors`. */
function bulkError(writeErrors: { code: number; index: number; errmsg: string }[], result: Doc): MongoBulkWriteError {
  const first = writeErrors[0]!;
  // The driver's constructor reads `result` only through getters (insertedCount, ...).
  return new MongoBulkWriteError({ message: first.errmsg, code: first.code, writeErrors } as never, result as never);
}

let databases = 0;

/**
 * A new, empty in-memory database, typed as the driver's `Db` for `new Tenant(db, org)`. Its
 * server, asked `buildInfo`, is no FerretDB, so counts go through countDocuments. Call
 * `ensureIndexes(db)` (src/db/collections.ts) for the service's unique indexes.
 */
export function memoryDb(name = `memory_${++databases}`): Db {
  const collections = new Map<string, MemoryCollection>();
  const db = {
    databaseName: name,
    collection(collection: string) {
      let c = collections.get(collection);
      if (!c) {
        c = new MemoryCollection(name, collection);
        collections.set(collection, c);
      }
      return c;
    },
    admin: () => ({
      async command(command: Doc) {
        if ('buildInfo' in command) return { ok: 1, version: '0.0.0-memory' };
        if ('ping' in command) return { ok: 1 };
        throw new MongoServerError({ message: `no such command: '${Object.keys(command)[0]}'`, code: 59, codeName: 'CommandNotFound' });
      },
    }),
    async command(command: Doc) {
      if ('ping' in command) return { ok: 1 };
      throw new MongoServerError({ message: `no such command: '${Object.keys(command)[0]}'`, code: 59, codeName: 'CommandNotFound' });
    },
  };
  return db as unknown as Db;
}
