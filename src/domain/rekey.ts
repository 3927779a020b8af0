import type { Filter } from 'mongodb';
import { COLLECTIONS, type CollectionName, type DeletedIdDoc, type TenantDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';

/**
 * Records keyed by what they join (a link's `_id` is its (course, group), a rule's its domain)
 * under a public `id`. A PATCH that changes the key inserts the new document, then deletes the
 * documents it read under the id; a crash in between leaves both, with one id, until the next
 * PATCH or DELETE of it.
 *
 * The id is the parent of its documents, in docs/event-core.md's protocol for what hangs off a
 * record: a DELETE marks the id deleted, then deletes its documents; a PATCH writes its new
 * document, then reads the mark, and takes the document back when it is there. Either sees the
 * other, so no number of PATCHes racing a DELETE (one building on another's new document
 * included) leaves a document of an id whose DELETE answered 204.
 */

export type Replaced = 'replaced' | 'superseded' | 'deleted';

const marks = (tenant: Tenant) => tenant.collection<DeletedIdDoc>(COLLECTIONS.deletedIds);
const markOf = (tenant: Tenant, name: CollectionName, id: number) => `${name}|${tenant.org}|${id}`;

/**
 * After `doc` (a PATCH's new document of `doc.id`) is inserted: 'replaced' when it took the place
 * of a document `replaced` names (the `_id`s the PATCH read under the id); else it is taken
 * back, 'deleted' when a DELETE of the id came first (the PATCH answers 404), 'superseded' when
 * another PATCH did (this one reads again and applies after it).
 */
export async function replaceKeyed<T extends TenantDoc & { id: number }>(
  tenant: Tenant,
  name: CollectionName,
  replaced: readonly string[],
  doc: T,
): Promise<Replaced> {
  const documents = tenant.collection<T>(name);
  const takeBack = () => documents.deleteMany({ _id: doc._id, id: doc.id } as Filter<T>);
  if (await marks(tenant).has({ _id: markOf(tenant, name, doc.id) })) {
    await takeBack();
    return 'deleted';
  }
  if ((await documents.deleteMany({ _id: { $in: [...replaced] }, id: doc.id } as Filter<T>)).deletedCount > 0) return 'replaced';
  await takeBack();
  return 'superseded';
}

/** DELETE of `id`: the documents it deleted (none: no such id here, or another DELETE took them). */
export async function deleteKeyed<T extends TenantDoc & { id: number }>(tenant: Tenant, name: CollectionName, id: number): Promise<T[]> {
  const documents = tenant.collection<T>(name);
  // An id with no document is not marked: it may not be claimed yet.
  if (!(await documents.has({ id } as Filter<T>))) return [];
  try {
    await marks(tenant).insertOne({ _id: markOf(tenant, name, id) });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  // One at a time, so the caller knows every document it deleted (a PATCH's new one included).
  const deleted: T[] = [];
  for (let doc = await documents.findOneAndDelete({ id } as Filter<T>); doc; doc = await documents.findOneAndDelete({ id } as Filter<T>))
    deleted.push(doc as T);
  return deleted;
}
