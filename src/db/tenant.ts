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

/**
 * Every write method bumps the data version after writing (src/db/data-version.ts), also when
 * the write fails part-way: this is the one place that keeps caches of any process honest.
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

  private async write<R>(operation: Promise<R>): Promise<R> {
    try {
      return await operation;
    } finally {
      await this.changed();
    }
  }

  /**
   * A primary-key read that FerretDB v1 pushes down to storage. It filters on `_id` alone and
   * checks the organization here: any second field in the filter (the `org` that findOne adds)
   * makes FerretDB decode and filter every document of the collection, 8 times slower on 20,000
   * documents (measured). Another organization's document is answered as missing.
   */
  async findById(id: string, options?: FindOptions): Promise<WithId<T> | null> {
    const projection = options?.projection ? { ...options.projection, org: 1 } : undefined;
    const doc = await this.inner.findOne({ _id: id } as Filter<T>, { ...options, ...(projection ? { projection } : {}) });
    return doc && doc.org === this.org ? doc : null;
  }

  find(filter: Filter<T> = {}, options?: FindOptions) {
    return this.inner.find(this.scope(filter), options);
  }

  findOne(filter: Filter<T>, options?: FindOptions) {
    return this.inner.findOne(this.scope(filter), options);
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
    await this.write(this.inner.insertOne(full as OptionalUnlessRequiredId<T>));
    return full;
  }

  updateOne(filter: Filter<T>, update: UpdateFilter<T>, options?: UpdateOptions) {
    return this.write(this.inner.updateOne(this.scope(filter), update, options));
  }

  findOneAndUpdate(filter: Filter<T>, update: UpdateFilter<T>, options: FindOneAndUpdateOptions = {}) {
    return this.write(this.inner.findOneAndUpdate(this.scope(filter), update, { returnDocument: 'after', ...options }));
  }

  deleteOne(filter: Filter<T>) {
    return this.write(this.inner.deleteOne(this.scope(filter)));
  }

  deleteMany(filter: Filter<T>) {
    return this.write(this.inner.deleteMany(this.scope(filter)));
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
