import type {
  AnyBulkWriteOperation,
  Collection,
  CountDocumentsOptions,
  Db,
  Document,
  Filter,
  FindOneAndUpdateOptions,
  FindOptions,
  OptionalUnlessRequiredId,
  UpdateFilter,
  UpdateOptions,
  WithId,
} from 'mongodb';
import { recordAfterWrite } from './change-log';
import { COLLECTIONS, type CollectionName, type TenantDoc } from './collections';
import { claimIds } from './counters';
import { isDuplicateKey } from './errors';

/**
 * Tenancy lives here and nowhere else. A `Tenant` is the only handle routes, domain functions
 * and event handlers get on organization-owned data, and every call it offers adds the
 * organization to the filter (overriding any `org` the caller wrote) or to the inserted
 * document. An id of another organization's record therefore behaves as a missing id.
 */
export class Tenant {
  constructor(
    readonly db: Db,
    readonly org: string,
  ) {}

  collection<T extends TenantDoc>(name: CollectionName): TenantCollection<T> {
    const inner = this.db.collection<T>(name);
    if (UNRECORDED.has(name)) return new TenantCollection<T>(this.db, inner, this.org);
    return new TenantCollection<T>(this.db, inner, this.org, (keys) =>
      recordAfterWrite(
        this.db,
        name,
        keys.map((k) => ({ k, o: this.org })),
      ),
    );
  }

  nextId(resource: string): Promise<number> {
    return claimIds(this.db, resource, 1);
  }

  /** Claims `count` ids at once; returns the last (the ids are `last - count + 1 … last`). */
  claimIds(resource: string, count: number): Promise<number> {
    return claimIds(this.db, resource, count);
  }
}

/**
 * Collections no cache reads: the search n-grams, derived from users and courses and rewritten
 * with them. Recording their writes would add a change-log write per gram write for nobody.
 */
const UNRECORDED: ReadonlySet<CollectionName> = new Set([COLLECTIONS.userGrams, COLLECTIONS.courseGrams]);

/**
 * How this server counts best, asked once per database handle: `count` when the server is
 * FerretDB and pushes the `count` command's filter down to SQL (FerretDB v1.24 does not: it
 * reads the whole table, while it pushes an aggregate's leading `$match` down), else
 * countDocuments (an aggregate, which MongoDB answers from the index alone, COUNT_SCAN, when the
 * index covers the filter). The one server difference of counting, kept here.
 */
const countingByDb = new WeakMap<Db, Map<string, Promise<'command' | 'aggregate'>>>();
function counting(db: Db, collection: string): Promise<'command' | 'aggregate'> {
  let known = countingByDb.get(db);
  if (!known) countingByDb.set(db, (known = new Map()));
  let way = known.get(collection);
  if (!way) {
    way = (async () => {
      const info = await db.admin().command({ buildInfo: 1 });
      if (typeof info.ferretdbVersion !== 'string') return 'aggregate' as const;
      // Asked of the collection itself: FerretDB plans nothing for one that does not exist yet.
      const plan = await db.command({ explain: { count: collection, query: { _id: '' } } });
      return plan.filterPushdown === true ? ('command' as const) : ('aggregate' as const);
    })();
    way.catch(() => known.delete(collection)); // ask again once the server answers
    known.set(collection, way);
  }
  return way;
}

/** The offset from which a page reads its ids from the index before its documents (TenantCollection.page). */
export const DEEP_OFFSET = 200;

/** Ids in list order: numbers numerically, strings by their UTF-8 bytes (as MongoDB sorts them). */
export function compareIds(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
}

/** `_id`s deleted per round of a deleteMany: each round reads them, deletes them and records them. */
const DELETE_BATCH = 1000;

/**
 * Values per `$in` read: the patched FerretDB turns an `$in` of at most 1000 values into an
 * indexed SQL lookup, and a longer one into a scan of the whole table (seconds at 40,000 rows).
 */
const IN_LIMIT = 1000;

/** The documents `read` finds for `values`, asking at most IN_LIMIT values at a time. */
async function readInPieces<V, D>(values: readonly V[], read: (piece: V[]) => Promise<D[]>): Promise<D[]> {
  const pieces: Promise<D[]>[] = [];
  for (let i = 0; i < values.length; i += IN_LIMIT) pieces.push(read(values.slice(i, i + IN_LIMIT)));
  return (await Promise.all(pieces)).flat();
}

/**
 * Every write that changed something records which records it changed in the change sequence
 * (src/db/change-log.ts), after writing, also when it failed part-way: this is the one place
 * that keeps caches of every process honest.
 */
export class TenantCollection<T extends TenantDoc> {
  constructor(
    private readonly db: Db,
    private readonly inner: Collection<T>,
    readonly org: string,
    private readonly changed: (keys: (string | null)[]) => Promise<void> = async () => undefined,
  ) {}

  private scope(filter: Filter<T>): Filter<T> {
    return { ...filter, org: this.org } as Filter<T>;
  }

  /**
   * Runs a write, then records the `_id`s it changed (null: it may have changed any). A write
   * that a unique key refused changed nothing; one that failed otherwise may have written part
   * of its work, so it records "anything".
   */
  private async write<R>(operation: Promise<R>, changedKeys: (result: R) => (string | null)[]): Promise<R> {
    let result: R;
    try {
      result = await operation;
    } catch (err) {
      if (!isDuplicateKey(err)) await this.changed([null]).catch(() => undefined); // report the write's own error
      throw err;
    }
    const keys = changedKeys(result);
    if (keys.length > 0) await this.changed(keys);
    return result;
  }

  /** The `_id` a filter names, if it names exactly one. */
  private static keyOf(filter: Document): string | null {
    return typeof filter._id === 'string' ? filter._id : null;
  }

  findById(id: string, options?: FindOptions): Promise<T | null> {
    // Our documents' `_id` is already a string, so WithId<T> is T.
    return this.findOne({ _id: id } as Filter<T>, options) as Promise<T | null>;
  }

  find(filter: Filter<T> = {}, options?: FindOptions) {
    return this.inner.find(this.scope(filter), options);
  }

  findOne(filter: Filter<T>, options?: FindOptions): Promise<WithId<T> | null> {
    return this.inner.findOne(this.scope(filter), options);
  }

  /** The organization's documents of these `_id`s, by `_id`, in one query (per 1000 ids). */
  async findByIds(ids: Iterable<string>, options?: FindOptions): Promise<Map<string, WithId<T>>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const docs = await readInPieces(unique, (piece) => this.find({ _id: { $in: piece } } as Filter<T>, options).toArray());
    return new Map(docs.map((d) => [d._id as string, d]));
  }

  countDocuments(filter: Filter<T> = {}, options?: CountDocumentsOptions) {
    return this.inner.countDocuments(this.scope(filter), options);
  }

  /**
   * How many documents match (at most `limit`, when given, so that a count stops early), by the
   * command this server answers from its index (see `counting`). The filter must be one an index
   * serves exactly (equalities on indexed fields), so both commands mean the same.
   */
  async count(filter: Filter<T> = {}, options: { limit?: number } = {}): Promise<number> {
    if ((await counting(this.db, this.inner.collectionName)) === 'command') {
      const answer = await this.db.command({
        count: this.inner.collectionName,
        query: this.scope(filter),
        ...(options.limit ? { limit: options.limit } : {}),
      });
      return Number(answer.n);
    }
    return this.inner.countDocuments(this.scope(filter), options.limit ? { limit: options.limit } : {});
  }

  /**
   * A page of the documents matching `filter` in `id` order. A shallow page is one query; from
   * DEEP_OFFSET on, the page's ids are read first with a projection the `{org, …, id}` index
   * covers (MongoDB skips index keys, not documents), then only the page's documents.
   */
  async page(filter: Filter<T>, page: { offset: number; limit: number }): Promise<WithId<T>[]> {
    if (page.offset < DEEP_OFFSET) return this.find(filter).sort({ id: 1 }).skip(page.offset).limit(page.limit).toArray();
    const keys = await this.find(filter, { projection: { _id: 0, id: 1 } }).sort({ id: 1 }).skip(page.offset).limit(page.limit).toArray();
    const ids = [...new Set(keys.map((k) => (k as unknown as { id: number | string }).id))];
    if (ids.length === 0) return [];
    const docs = await this.find({ ...filter, id: { $in: ids } } as Filter<T>).toArray();
    return docs.sort((a, b) => compareIds((a as unknown as { id: number | string }).id, (b as unknown as { id: number | string }).id));
  }

  /** Aggregations start with the organization's `$match`; callers add the rest. */
  aggregate<R extends Document>(pipeline: Document[]) {
    return this.inner.aggregate<R>([{ $match: { org: this.org } }, ...pipeline]);
  }

  async insertOne(doc: Omit<T, 'org'>): Promise<T> {
    const full = { ...doc, org: this.org } as T;
    await this.write(this.inner.insertOne(full as OptionalUnlessRequiredId<T>), () => [full._id]);
    return full;
  }

  /**
   * Inserts what it can of `docs` (unordered: a duplicate `_id` skips that document, not the
   * rest) and returns the `_id`s refused as duplicates. Any other failure is thrown.
   */
  async insertMany(docs: Omit<T, 'org'>[]): Promise<Set<string>> {
    if (docs.length === 0) return new Set();
    const full = docs.map((d) => ({ ...d, org: this.org }) as OptionalUnlessRequiredId<T>);
    const keys = docs.map((d) => d._id);
    try {
      await this.inner.insertMany(full, { ordered: false });
      await this.changed(keys);
      return new Set();
    } catch (err) {
      await this.changed(keys).catch(() => undefined);
      const writeErrors = (err as { writeErrors?: { code: number; index: number }[] | { code: number; index: number } }).writeErrors;
      const errors = writeErrors === undefined ? [] : Array.isArray(writeErrors) ? writeErrors : [writeErrors];
      if (!isDuplicateKey(err) || errors.length === 0 || errors.some((e) => e.code !== 11000)) throw err;
      return new Set(errors.map((e) => keys[e.index]!));
    }
  }

  updateOne(filter: Filter<T>, update: UpdateFilter<T>, options?: UpdateOptions) {
    return this.write(this.inner.updateOne(this.scope(filter), update, options), (r) => {
      if (r.upsertedId !== null && r.upsertedId !== undefined) return [String(r.upsertedId)];
      return r.modifiedCount > 0 ? [TenantCollection.keyOf(filter)] : [];
    });
  }

  /** Updates every match in one command; records "anything may have changed" when it changed something. */
  updateMany(filter: Filter<T>, update: UpdateFilter<T>) {
    return this.write(this.inner.updateMany(this.scope(filter), update), (r) => (r.modifiedCount > 0 ? [null] : []));
  }

  findOneAndUpdate(filter: Filter<T>, update: UpdateFilter<T>, options: FindOneAndUpdateOptions = {}) {
    return this.write(this.inner.findOneAndUpdate(this.scope(filter), update, { returnDocument: 'after', ...options }), (doc) =>
      doc ? [doc._id as string] : [],
    );
  }

  /**
   * Updates the match or, when nothing matches, inserts (with the filter's equalities, `org`
   * among them); says which. One atomic command. A filter that misses a record whose `_id` it
   * names collides with it on insert: E11000, for the caller to read as "exists, not matching".
   */
  async upsertOne(filter: Filter<T>, update: UpdateFilter<T>): Promise<{ doc: T; inserted: boolean }> {
    const result = await this.write(
      this.inner.findOneAndUpdate(this.scope(filter), update, { upsert: true, returnDocument: 'after', includeResultMetadata: true }),
      (r) => (r.value ? [r.value._id as string] : []),
    );
    return { doc: result.value as T, inserted: result.lastErrorObject?.updatedExisting === false };
  }

  /**
   * Many conditional upserts in one command (unordered): each `{filter, set}` updates the
   * document its filter matches or inserts one (with the filter's equalities); one whose filter
   * misses an existing `_id` is refused by the key and skipped, which is how a caller says
   * "unless a newer version is there". Other failures are thrown. Records nothing: for the
   * unrecorded collections only.
   */
  async upsertEach(entries: { filter: Filter<T>; set: Partial<T> }[]): Promise<void> {
    if (entries.length === 0) return;
    const ops = entries.map(
      (e) => ({ updateOne: { filter: this.scope(e.filter), update: { $set: e.set }, upsert: true } }) as AnyBulkWriteOperation<T>,
    );
    try {
      await this.inner.bulkWrite(ops, { ordered: false });
    } catch (err) {
      const writeErrors = (err as { writeErrors?: { code: number }[] | { code: number } }).writeErrors;
      const errors = writeErrors === undefined ? [] : Array.isArray(writeErrors) ? writeErrors : [writeErrors];
      if (errors.length === 0 || errors.some((e) => e.code !== 11000)) throw err;
    }
  }

  findOneAndDelete(filter: Filter<T>) {
    return this.write(this.inner.findOneAndDelete(this.scope(filter)), (doc) => (doc ? [doc._id as string] : []));
  }

  async deleteOne(filter: Filter<T>): Promise<{ deletedCount: number }> {
    const doc = await this.findOneAndDelete(filter);
    return { deletedCount: doc ? 1 : 0 };
  }

  /**
   * Deletes every match, a batch at a time: read the `_id`s, delete those that still match,
   * record them. So every deleted record is named in the change sequence, however it was
   * found. A filter that names `_id` itself is one plain delete.
   */
  async deleteMany(filter: Filter<T>): Promise<{ deletedCount: number }> {
    if ('_id' in filter) {
      const r = await this.write(this.inner.deleteMany(this.scope(filter)), (r) => (r.deletedCount > 0 ? [TenantCollection.keyOf(filter)] : []));
      return { deletedCount: r.deletedCount };
    }
    let deletedCount = 0;
    for (;;) {
      const ids = (await this.find(filter, { projection: { _id: 1 } }).limit(DELETE_BATCH).toArray()).map((d) => d._id as string);
      if (ids.length === 0) return { deletedCount };
      const r = await this.write(this.inner.deleteMany(this.scope({ ...filter, _id: { $in: ids } } as Filter<T>)), (r) =>
        r.deletedCount > 0 ? ids : [],
      );
      deletedCount += r.deletedCount;
    }
  }
}

/**
 * The two questions asked before an organization is known, answered by primary key: which
 * organization owns a course (access decisions: "the organization is the course's") and which
 * owns a user (event handlers upserting a user that may have moved, the import telling new users
 * from known ones). Nothing else reads across organizations.
 */
export function ownerLookup(db: Db) {
  return {
    async courseOrg(courseKey: string): Promise<string | null> {
      const doc = await db.collection<TenantDoc>('courses').findOne({ _id: courseKey }, { projection: { org: 1 } });
      return doc?.org ?? null;
    },
    /** The organization of each known course of `courseKeys`, in one query (an access batch). */
    async courseOrgs(courseKeys: readonly string[]): Promise<Map<string, string>> {
      if (courseKeys.length === 0) return new Map();
      const docs = await db
        .collection<TenantDoc>('courses')
        .find({ _id: { $in: [...new Set(courseKeys)] } }, { projection: { org: 1 } })
        .toArray();
      return new Map(docs.map((d) => [d._id, d.org]));
    },
    async userOrg(userId: number): Promise<string | null> {
      const doc = await db.collection<TenantDoc>('users').findOne({ _id: String(userId) }, { projection: { org: 1 } });
      return doc?.org ?? null;
    },
    /**
     * The organization of each known user of `userIds` (an import batch: is a user new
     * anywhere?). By `_id` alone: with the organization in the filter as well, SQLite's planner
     * picks the organization's index for a long `$in` and reads every user of it.
     */
    async userOrgs(userIds: readonly number[]): Promise<Map<number, string>> {
      const ids = [...new Set(userIds)].map(String);
      const docs = await readInPieces(ids, (piece) =>
        db.collection<TenantDoc>('users').find({ _id: { $in: piece } }, { projection: { org: 1 } }).toArray(),
      );
      return new Map(docs.map((d) => [Number(d._id), d.org]));
    },
  };
}
