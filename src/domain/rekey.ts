import type { Filter } from 'mongodb';
import type { TenantDoc } from '../db/collections';
import type { TenantCollection } from '../db/tenant';

/**
 * A record whose `_id` is its natural key (a link's (course, group), a rule's domain) changes key
 * by insert, then delete, under one public `id`. `doc` (inserted) takes the place of the documents
 * `replaced` (the `_id`s read under its id) if one of them is still there to delete; if none is, a
 * DELETE or PATCH of the id came first and `doc` is taken back: false, and the caller reads again
 * (a DELETE answered 204 is never undone).
 */
export async function replaceKeyed<T extends TenantDoc & { id: number }>(
  collection: TenantCollection<T>,
  replaced: readonly string[],
  doc: T,
): Promise<boolean> {
  if ((await collection.deleteMany({ _id: { $in: [...replaced] }, id: doc.id } as Filter<T>)).deletedCount > 0) return true;
  await collection.deleteMany({ _id: doc._id, id: doc.id } as Filter<T>);
  return false;
}
