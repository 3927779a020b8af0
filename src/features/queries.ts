import type { Filter, WithId } from 'mongodb';
import type { TenantDoc } from '../db/collections';
import type { Page, TenantCollection } from '../db/tenant';

/** How a resource shows its documents (adding what they reference). */
type Present<D, R> = (docs: WithId<D>[]) => R[] | Promise<R[]>;

/**
 * The reads every resource's queries make the same way, so that a resource's queries.ts holds
 * only what is its own: the page of `records` that `filter` selects (TenantCollection.list), as
 * the resource shows it, with how many it selects in all.
 */
export async function listPage<D extends TenantDoc, R>(
  records: TenantCollection<D>,
  page: Page,
  filter: Filter<D>,
  present: Present<D, R>,
): Promise<{ count: number; results: R[] }> {
  const { count, docs } = await records.list(filter, page);
  return { count, results: await present(docs) };
}

/** The record `filter` names, as the resource shows it (null: none in this organization). */
export async function getOne<D extends TenantDoc, R>(records: TenantCollection<D>, filter: Filter<D>, present: Present<D, R>): Promise<R | null> {
  const doc = await records.findOne(filter);
  return doc && (await present([doc]))[0]!;
}
