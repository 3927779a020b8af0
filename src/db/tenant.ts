import type {
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
import { type CollectionName, type TenantDoc } from './collections';
import { nextId } from './counters';
import { isDuplicateKey } from '../http/errors';
import { bumpAfterWrite } from './data-version';

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
    return new TenantCollection<T>(this.db.collection<T>(name), this.org, () => bumpAfterWrite(this.db, name));
  }

  nextId(resource: string): Promise<number> {
    return nextId(this.db, resource);
  }
}

type Scoped<T> = Filter<T>;

/** A projection that still returns `org`, so the organization can be checked. */
function keepOrg(projection: Document | undefined): Document | undefined {
  if (!projection) return projection;
  const inclusive = Object.values(projection).some((v) => v === 1 || v === true);
  if (inclusive) return { ...projection, org: 1 };
  const { org: _dropped, ...rest } = projection;
  return rest;
}

/**
 * Every write method that changed something bumps the data version after writing
 * (src/db/data-version.ts), also when the write failed part-way: this is the one place that keeps
 * caches of any process honest.
 */
export class TenantCollection<T extends TenantDoc> {
  constructor(
    private readonly inner: Collection<T>,
    readonly org: string,
    private readonly changed: () => Promise<void> = async () => undefined,
  ) {}

  private scope(filter: Filter<T>): Scoped<T> {
    return { ...filter, org: this.org } as Filter<T>;
  }

  /**
   * Runs a write, then bumps the data version if it may have changed something: it changed a
   * document, or it failed other than by a duplicate key (cautious). A write that matched
   * nothing, or that a unique key refused, leaves caches alone.
   */
  private async write<R>(operation: Promise<R>, changedSomething: (result: R) => boolean): Promise<R> {
    let result: R;
    try {
      result = await operation;
    } catch (err) {
      // A duplicate key refused the whole write; anything else may have written part of it.
      if (!isDuplicateKey(err)) await this.changed().catch(() => undefined); // report the write's own error
      throw err;
    }
    if (changedSomething(result)) await this.changed();
    return result;
  }

  /** A primary-key read of this organization's document (see findOne for why it is fast). */
  findById(id: string, options?: FindOptions): Promise<T | null> {
    // Our documents' `_id` is already a string, so WithId<T> is T.
    return this.findOne({ _id: id } as Filter<T>, options) as Promise<T | null>;
  }

  find(filter: Filter<T> = {}, options?: FindOptions) {
    return this.inner.find(this.scope(filter), options);
  }

  /**
   * A filter that is exactly `{_id: <string>}` is sent as it is and the organization is checked
   * on the one document it can return: FerretDB v1 pushes a filter down to its storage only when
   * it is exactly that, so adding `org` to it would turn a key lookup into a collection scan.
   * Reading one document is atomic, so this is the same answer as `{_id, org}`.
   */
  async findOne(filter: Filter<T>, options?: FindOptions): Promise<WithId<T> | null> {
    const keys = Object.keys(filter);
    if (keys.length === 1 && typeof filter._id === 'string') {
      const doc = await this.inner.findOne({ _id: filter._id } as Filter<T>, { ...options, projection: keepOrg(options?.projection) });
      return doc && doc.org === this.org ? doc : null;
    }
    return this.inner.findOne(this.scope(filter), options);
  }

  /** The documents of these `_id`s that belong to the organization, by key lookups (see findOne). */
  async findByIds(ids: Iterable<string>, options?: FindOptions): Promise<Map<string, WithId<T>>> {
    const unique = [...new Set(ids)];
    const docs = await Promise.all(unique.map((_id) => this.findOne({ _id } as Filter<T>, options)));
    const out = new Map<string, WithId<T>>();
    for (const doc of docs) if (doc) out.set(doc._id as string, doc);
    return out;
  }

  countDocuments(filter: Filter<T> = {}, options?: CountDocumentsOptions) {
    return this.inner.countDocuments(this.scope(filter), options);
  }

  /** Aggregations start with the organization's `$match`; callers add the rest. */
  aggregate<R extends Document>(pipeline: Document[]) {
    return this.inner.aggregate<R>([{ $match: { org: this.org } }, ...pipeline]);
  }

  async insertOne(doc: Omit<T, 'org'>): Promise<T> {
    const full = { ...doc, org: this.org } as T;
    await this.write(this.inner.insertOne(full as OptionalUnlessRequiredId<T>), () => true);
    return full;
  }

  updateOne(filter: Filter<T>, update: UpdateFilter<T>, options?: UpdateOptions) {
    return this.write(this.inner.updateOne(this.scope(filter), update, options), (r) => r.matchedCount + r.upsertedCount > 0);
  }

  findOneAndUpdate(filter: Filter<T>, update: UpdateFilter<T>, options: FindOneAndUpdateOptions = {}) {
    return this.write(this.inner.findOneAndUpdate(this.scope(filter), update, { returnDocument: 'after', ...options }), (doc) => doc !== null);
  }

  deleteOne(filter: Filter<T>) {
    return this.write(this.inner.deleteOne(this.scope(filter)), (r) => r.deletedCount > 0);
  }

  deleteMany(filter: Filter<T>) {
    return this.write(this.inner.deleteMany(this.scope(filter)), (r) => r.deletedCount > 0);
  }
}

/**
 * The two questions asked before an organization is known, answered by primary key: which
 * organization owns a course (access decisions: "the organization is the course's") and which
 * owns a user (event handlers upserting a user that may have moved). Nothing else reads across
 * organizations.
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
  };
}
