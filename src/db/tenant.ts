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
  UpdateResult,
  WithId,
} from 'mongodb';
import { recordAfterWrite } from './change-log';
import { COLLECTIONS, type CollectionName, type TenantDoc } from './collections';
import { claimIds } from './counters';
import { isDuplicateKey } from './errors';
import { dropIntent, INTENT_GRACE_MS, type Intent, intentPolicy, narrowIntent, openIntent, reopenIntent, signalDone, TRACKED } from './outbox';

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
    return new TenantCollection<T>(this.db, name, this.org);
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
 * FerretDB and pushes the `count` command's filter down to SQL, else countDocuments (an
 * aggregate, which MongoDB answers from the index alone, COUNT_SCAN, when the index covers the
 * filter). The one server difference of counting, kept here.
 */
const countingByDb = new WeakMap<Db, Map<string, Promise<'command' | 'aggregate'>>>();
function counting(db: Db, collection: string): Promise<'command' | 'aggregate'> {
  let known = countingByDb.get(db);
  if (!known) {
    known = new Map();
    countingByDb.set(db, known);
  }
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

/** What a tracked write knows before it runs: the records it may change and, when audited, how they are. */
interface Plan {
  keys: string[];
  before?: (Document | null)[];
}

/** The record a tracked write aims at, found before it runs (null: nothing matches, nothing to do). */
interface Target<T> {
  key: string;
  before: T | null;
}

const NO_MATCH: UpdateResult = { acknowledged: true, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedId: null };

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
 * Every write passes here, and every write that changed something records which records it
 * changed in the change sequence (src/db/change-log.ts), after writing, also when it failed
 * part-way: this is the one place that keeps caches of every process honest.
 *
 * Writes of the tracked collections (src/db/outbox.ts) also open an outbox intent first, naming
 * the records they may change, so a change cannot be committed and then forgotten by a process
 * that dies before publishing it. That needs the records' `_id`s before the write: a filter that
 * names no `_id` is resolved by one read first, and the write then aims at what it found.
 */
export class TenantCollection<T extends TenantDoc> {
  private readonly inner: Collection<T>;

  constructor(
    private readonly db: Db,
    private readonly name: CollectionName,
    readonly org: string,
  ) {
    this.inner = db.collection<T>(name);
  }

  private scope(filter: Filter<T>): Filter<T> {
    return { ...filter, org: this.org } as Filter<T>;
  }

  /** Records the change (naming the intent the write carried out) for caches and the relay. */
  private async changed(keys: (string | null)[], intent: Intent | null): Promise<void> {
    if (UNRECORDED.has(this.name)) return;
    const i = intent ? { i: intent.id } : {};
    await recordAfterWrite(
      this.db,
      this.name,
      keys.map((k) => ({ k, o: this.org, ...i })),
    );
    if (intent) signalDone(this.db);
  }

  /**
   * Records in the change sequence that these records may have changed, without writing them: a
   * redelivered event (a duplicate) re-announces what its first delivery wrote, in case that
   * process died between the write and its change record and left other processes' caches stale.
   */
  announce(keys: string[]): Promise<void> {
    return this.changed(keys, null);
  }

  /**
   * Opens the intent (when `plan`), runs the write, then records the `_id`s it changed (null: it
   * may have changed any). A write that a unique key refused changed nothing: its intent goes.
   * One that failed otherwise may have written part of its work: it records "anything", and its
   * intent stays for the relay to resolve after the grace period (the write may still land).
   */
  private async write<R>(plan: Plan | null, operation: () => Promise<R>, changedKeys: (result: R) => (string | null)[]): Promise<R> {
    let intent = plan && plan.keys.length > 0 ? await openIntent(this.db, this.name, this.org, plan.keys, plan.before) : null;
    let result: R;
    try {
      result = await operation();
    } catch (err) {
      if (isDuplicateKey(err)) {
        if (intent) await dropIntent(this.db, intent).catch(() => undefined);
      } else {
        await this.changed([null], null).catch(() => undefined); // report the write's own error
      }
      throw err;
    }
    const keys = changedKeys(result);
    if (keys.length === 0) {
      if (intent) await dropIntent(this.db, intent).catch(() => undefined); // else resolved after the grace, as unchanged
      return result;
    }
    // The relay may have resolved an intent this old already, reading the record before the
    // write landed: a fresh one, written after the write, makes sure the change is published.
    if (intent && Date.now() - intent.at > INTENT_GRACE_MS / 2) intent = await reopenIntent(this.db, intent);
    await this.changed(keys, intent);
    return result;
  }

  /** The `_id` a filter names, if it names exactly one. */
  private static keyOf(filter: Document): string | null {
    return typeof filter._id === 'string' ? filter._id : null;
  }

  /** This organization's record of `_id` `key`, as it is (null: none here). One key lookup. */
  private async current(key: string): Promise<T | null> {
    const doc = (await this.inner.findOne({ _id: key } as Filter<T>)) as T | null;
    return doc && doc.org === this.org ? doc : null;
  }

  /** For a tracked write: the record `filter` aims at (one read when it names no `_id`). */
  private async target(filter: Filter<T>, audit: boolean, upsert = false): Promise<Target<T> | null> {
    const key = TenantCollection.keyOf(filter);
    if (key !== null) return { key, before: audit ? await this.current(key) : null };
    if (upsert) throw new Error(`an upsert of ${this.name} must name its _id`);
    const doc = (await this.inner.findOne(this.scope(filter))) as T | null;
    return doc && { key: doc._id, before: doc };
  }

  private plan(policy: { audit: boolean }, keys: string[], before: (T | null)[]): Plan {
    return { keys, ...(policy.audit ? { before } : {}) };
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
    const keys = await this.find(filter, { projection: { _id: 0, id: 1 } })
      .sort({ id: 1 })
      .skip(page.offset)
      .limit(page.limit)
      .toArray();
    const ids = [...new Set(keys.map((k) => (k as unknown as { id: number | string }).id))];
    if (ids.length === 0) return [];
    const docs = await this.find({ ...filter, id: { $in: ids } } as Filter<T>).toArray();
    return docs.sort((a, b) => compareIds((a as unknown as { id: number | string }).id, (b as unknown as { id: number | string }).id));
  }

  /** Updates every match in one command; records "anything may have changed" when it changed something. Untracked collections only. */
  updateMany(filter: Filter<T>, update: UpdateFilter<T>) {
    return this.write(
      null,
      () => this.inner.updateMany(this.scope(filter), update),
      (r) => (r.modifiedCount > 0 ? [null] : []),
    );
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
    const ops = entries.map((e) => ({ updateOne: { filter: this.scope(e.filter), update: { $set: e.set }, upsert: true } }) as AnyBulkWriteOperation<T>);
    try {
      await this.inner.bulkWrite(ops, { ordered: false });
    } catch (err) {
      const writeErrors = (err as { writeErrors?: { code: number }[] | { code: number } }).writeErrors;
      const errors = writeErrors === undefined ? [] : Array.isArray(writeErrors) ? writeErrors : [writeErrors];
      if (errors.length === 0 || errors.some((e) => e.code !== 11000)) throw err;
    }
  }

  /**
   * Updates one document's fields that no cache, list or change event reads (an event's own
   * bookkeeping, such as a user's activation claim): the change sequence is not moved for them,
   * so the write is one command. True when a document matched (`many`: every match is updated).
   * Untracked collections only.
   */
  async updateBookkeeping(filter: Filter<T>, update: UpdateFilter<T>, options: { many?: boolean } = {}): Promise<boolean> {
    if (TRACKED.has(this.name)) throw new Error(`${this.name} is tracked: its writes are recorded`);
    const r = options.many ? await this.inner.updateMany(this.scope(filter), update) : await this.inner.updateOne(this.scope(filter), update);
    return r.matchedCount > 0;
  }

  /** Aggregations start with the organization's `$match`; callers add the rest. */
  aggregate<R extends Document>(pipeline: Document[]) {
    return this.inner.aggregate<R>([{ $match: { org: this.org } }, ...pipeline]);
  }

  async insertOne(doc: Omit<T, 'org'>): Promise<T> {
    const full = { ...doc, org: this.org } as T;
    const policy = intentPolicy(this.db, this.name);
    // A new record had no "before"; an existing `_id` makes the insert fail, and its intent go.
    const plan = policy && this.plan(policy, [full._id], [null]);
    await this.write(
      plan,
      () => this.inner.insertOne(full as OptionalUnlessRequiredId<T>),
      () => [full._id],
    );
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
    const policy = intentPolicy(this.db, this.name);
    const intent = policy && (await openIntent(this.db, this.name, this.org, keys, policy.audit ? keys.map(() => null) : undefined));
    try {
      await this.inner.insertMany(full, { ordered: false });
      await this.changed(keys, intent);
      return new Set();
    } catch (err) {
      const writeErrors = (err as { writeErrors?: { code: number; index: number }[] | { code: number; index: number } }).writeErrors;
      const errors = writeErrors === undefined ? [] : Array.isArray(writeErrors) ? writeErrors : [writeErrors];
      const onlyDuplicates = isDuplicateKey(err) && errors.length > 0 && errors.every((e) => e.code === 11000);
      const refused = new Set(errors.map((e) => keys[e.index]!));
      if (intent && onlyDuplicates) {
        const inserted = keys.filter((k) => !refused.has(k));
        // The intent names only what this call created: an existing record is not its change.
        await (inserted.length === 0 ? dropIntent(this.db, intent) : narrowIntent(this.db, intent, inserted)).catch(() => undefined);
        if (inserted.length > 0) await this.changed(inserted, intent).catch(() => undefined);
      } else {
        await this.changed(keys, null).catch(() => undefined);
      }
      if (!onlyDuplicates) throw err;
      return refused;
    }
  }

  async updateOne(filter: Filter<T>, update: UpdateFilter<T>, options?: UpdateOptions): Promise<UpdateResult<T>> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit, options?.upsert === true));
    if (policy && !target) return NO_MATCH as UpdateResult<T>;
    const aimed = target ? ({ ...filter, _id: target.key } as Filter<T>) : filter;
    return this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.updateOne(this.scope(aimed), update, options),
      (r) => {
        if (r.upsertedId !== null && r.upsertedId !== undefined) return [String(r.upsertedId)];
        return r.modifiedCount > 0 ? [TenantCollection.keyOf(aimed)] : [];
      },
    );
  }

  async findOneAndUpdate(filter: Filter<T>, update: UpdateFilter<T>, options: FindOneAndUpdateOptions = {}): Promise<WithId<T> | null> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit, options.upsert === true));
    if (policy && !target) return null;
    const aimed = target ? ({ ...filter, _id: target.key } as Filter<T>) : filter;
    return this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.findOneAndUpdate(this.scope(aimed), update, { returnDocument: 'after', ...options }),
      (doc) => (doc ? [doc._id as string] : []),
    );
  }

  /**
   * Updates the match or, when nothing matches, inserts (with the filter's equalities, `org`
   * among them); says which. One atomic command. A filter that misses a record whose `_id` it
   * names collides with it on insert: E11000, for the caller to read as "exists, not matching".
   */
  async upsertOne(filter: Filter<T>, update: UpdateFilter<T>): Promise<{ doc: T; inserted: boolean }> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit, true));
    const result = await this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.findOneAndUpdate(this.scope(filter), update, { upsert: true, returnDocument: 'after', includeResultMetadata: true }),
      (r) => (r.value ? [r.value._id as string] : []),
    );
    return { doc: result.value as T, inserted: result.lastErrorObject?.updatedExisting === false };
  }

  async findOneAndDelete(filter: Filter<T>): Promise<WithId<T> | null> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit));
    if (policy && !target) return null;
    const aimed = target ? ({ ...filter, _id: target.key } as Filter<T>) : filter;
    return this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.findOneAndDelete(this.scope(aimed)),
      (doc) => (doc ? [doc._id as string] : []),
    );
  }

  async deleteOne(filter: Filter<T>): Promise<{ deletedCount: number }> {
    const doc = await this.findOneAndDelete(filter);
    return { deletedCount: doc ? 1 : 0 };
  }

  /**
   * Deletes every match, a batch at a time: read the `_id`s, delete those that still match,
   * record them. So every deleted record is named in the change sequence (and in its intent),
   * however it was found. A filter that names `_id` itself is one plain delete.
   */
  async deleteMany(filter: Filter<T>): Promise<{ deletedCount: number }> {
    const policy = intentPolicy(this.db, this.name);
    if (typeof filter._id === 'string' || (!policy && '_id' in filter)) {
      const key = TenantCollection.keyOf(filter);
      const plan = policy && key !== null ? this.plan(policy, [key], [policy.audit ? await this.current(key) : null]) : null;
      const r = await this.write(
        plan,
        () => this.inner.deleteMany(this.scope(filter)),
        (r) => (r.deletedCount > 0 ? [key] : []),
      );
      return { deletedCount: r.deletedCount };
    }
    let deletedCount = 0;
    for (;;) {
      // Audited: whole records, for the intent's "before"; else their `_id`s.
      const docs = (await this.find(filter, policy?.audit ? {} : { projection: { _id: 1 } })
        .limit(DELETE_BATCH)
        .toArray()) as T[];
      const ids = docs.map((d) => d._id);
      if (ids.length === 0) return { deletedCount };
      const r = await this.write(
        policy && this.plan(policy, ids, docs),
        () => this.inner.deleteMany(this.scope({ ...filter, _id: { $in: ids } } as Filter<T>)),
        (r) => (r.deletedCount > 0 ? ids : []),
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
        db
          .collection<TenantDoc>('users')
          .find({ _id: { $in: piece } }, { projection: { org: 1 } })
          .toArray(),
      );
      return new Map(docs.map((d) => [Number(d._id), d.org]));
    },
  };
}
