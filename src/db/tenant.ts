import type { CountDocumentsOptions, Db, Document, Filter, FindOptions, WithId } from 'mongodb';
import type { CollectionName, TenantDoc } from './collections';
import { claimIds } from './counters';
import { compareIds, countingWay, readInPieces, sortedHere } from './dialect';
import { TrackedCollection } from './tracked-writes';

/**
 * Tenancy lives here and nowhere else. A `Tenant` is the only handle routes, domain functions
 * and event handlers get on organization-owned data, and every call it offers adds the
 * organization to the filter (overriding any `org` the caller wrote) or to the inserted
 * document. An id of another organization's record therefore behaves as a missing id.
 * (Writes follow the tracked-write protocol, src/db/tracked-writes.ts; the few questions asked
 * before an organization is known are src/db/owners.ts's.)
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

/** One page of a list: `limit` records after the first `offset` (the API's `limit` and `offset`). */
export interface Page {
  limit: number;
  offset: number;
}

/** The offset from which a page reads its ids from the index before its documents (TenantCollection.page). */
const DEEP_OFFSET = 200;

/** One organization's documents of one collection: reads here, writes by the tracked-write protocol. */
export class TenantCollection<T extends TenantDoc> extends TrackedCollection<T> {
  protected scope(filter: Filter<T>): Filter<T> {
    return { ...filter, org: this.org } as Filter<T>;
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

  /** Whether this organization has a record `filter` matches (its `_id` alone is read). */
  async has(filter: Filter<T>): Promise<boolean> {
    return (await this.findOne(filter, { projection: { _id: 1 } })) !== null;
  }

  /** The organization's documents of these `_id`s, by `_id`, in one query (per 1000 ids). */
  async findByIds(ids: Iterable<string>, options?: FindOptions): Promise<Map<string, WithId<T>>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const docs = await readInPieces(unique, (piece) => this.find({ _id: { $in: piece } } as Filter<T>, options).toArray());
    return new Map(docs.map((d) => [d._id as string, d]));
  }

  /** Every match of a filter that selects a few documents through an index of its own, in `id` order (sorted here: src/db/dialect.ts). */
  async findFew(filter: Filter<T>, options?: FindOptions): Promise<WithId<T>[]> {
    return sortedHere((await this.find(filter, options).toArray()) as (WithId<T> & { id: number | string })[]);
  }

  countDocuments(filter: Filter<T> = {}, options?: CountDocumentsOptions) {
    return this.inner.countDocuments(this.scope(filter), options);
  }

  /**
   * How many documents match (at most `limit`, when given, so that a count stops early), by the
   * command this server answers from its index (src/db/dialect.ts). The filter must be one an
   * index serves exactly (equalities on indexed fields), so both commands mean the same.
   */
  async count(filter: Filter<T> = {}, options: { limit?: number } = {}): Promise<number> {
    if ((await countingWay(this.db, this.inner.collectionName)) === 'command') {
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
  async page(filter: Filter<T>, page: Page): Promise<WithId<T>[]> {
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

  /**
   * The page of the documents `filter` selects, in id order, with how many it selects in all.
   * Both are served by an index (count and page above), so `filter` must be equalities on
   * indexed fields (docs/lists-and-search.md).
   */
  async list(filter: Filter<T>, page: Page): Promise<{ count: number; docs: WithId<T>[] }> {
    const [count, docs] = await Promise.all([this.count(filter), this.page(filter, page)]);
    return { count, docs };
  }

  /** Aggregations start with the organization's `$match`; callers add the rest. */
  aggregate<R extends Document>(pipeline: Document[]) {
    return this.inner.aggregate<R>([{ $match: { org: this.org } }, ...pipeline]);
  }
}
