import type { Filter, WithId } from 'mongodb';
import type { TenantDoc } from './collections';
import type { Page, TenantCollection } from './tenant';

export type { Page };

/** How a resource shows its documents (adding what they reference). */
type Present<D, R> = (docs: WithId<D>[]) => R[] | Promise<R[]>;

/**
 * The reads every resource's repository makes the same way, so that a repository holds only
 * what is its own: the page of `records` that `filter` selects, in id order, with how many it
 * selects in all. Both are served by an index (TenantCollection.count and .page), so `filter`
 * must be equalities on indexed fields (docs/lists-and-search.md).
 */
export async function listPage<D extends TenantDoc, R>(
  records: TenantCollection<D>,
  page: Page,
  filter: Filter<D>,
  present: Present<D, R>,
): Promise<{ count: number; results: R[] }> {
  const [count, docs] = await Promise.all([records.count(filter), records.page(filter, page)]);
  return { count, results: await present(docs) };
}

/** The record `filter` names, as the resource shows it (null: none in this organization). */
export async function getOne<D extends TenantDoc, R>(records: TenantCollection<D>, filter: Filter<D>, present: Present<D, R>): Promise<R | null> {
  const doc = await records.findOne(filter);
  return doc && (await present([doc]))[0]!;
}

/** Whether this organization has the record `filter` names (its `_id` alone is read). */
export async function hasOne<D extends TenantDoc>(records: TenantCollection<D>, filter: Filter<D>): Promise<boolean> {
  return (await records.findOne(filter, { projection: { _id: 1 } })) !== null;
}
