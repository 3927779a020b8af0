import type { Filter } from 'mongodb';
import { COLLECTIONS, type CollectionName, type DeletedIdDoc, type TenantDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant, TenantCollection } from '../db/tenant';

/**
 * Records keyed by what they join (a link's `_id` is its (course, group), a rule's its domain)
 * under a public `id`. A PATCH that changes the key inserts the new document, then deletes the
 * documents it read under the id; a crash in between leaves both, with one id, until a PATCH
 * changes its key again or a DELETE deletes it (a PATCH cannot tell a dead PATCH's documents
 * from those of one under way).
 *
 * The id is the parent of its documents, in docs/event-core.md's protocol for what hangs off a
 * record: a DELETE marks the id deleted, then deletes its documents until none is left; a PATCH
 * writes its new document, then reads the mark, and when it is there finishes the DELETE (its
 * own document included) and answers 404. Either sees the other, so no number of PATCHes racing
 * a DELETE (one building on another's new document included) leaves a document of an id whose
 * DELETE answered 204. Every PATCH reads the mark first too, so a DELETE that died after its
 * mark is finished by the next PATCH of the id, whatever it changes.
 */

export type Replaced = 'replaced' | 'superseded' | 'deleted';

const marks = (tenant: Tenant) => tenant.collection<DeletedIdDoc>(COLLECTIONS.deletedIds);
const markOf = (tenant: Tenant, name: CollectionName, id: number) => `${name}|${tenant.org}|${id}`;

/**
 * Every PATCH of `id` asks this first (and a re-keying one again after its insert): null when
 * the id is not marked deleted; else the DELETE, under way or dead after its mark, is finished
 * here, and the documents this deleted are returned (the PATCH answers 404).
 */
export async function finishIfDeleted<T extends TenantDoc & { id: number }>(tenant: Tenant, name: CollectionName, id: number): Promise<T[] | null> {
  if (!(await marks(tenant).has({ _id: markOf(tenant, name, id) }))) return null;
  return deleteAll(tenant.collection<T>(name), id);
}

/**
 * After `doc` (a PATCH's new document of `doc.id`) is inserted: 'replaced' when it took the place
 * of a document it read (`unchanged`: one filter per document read, matching it only as it was
 * read); else it is taken back, 'deleted' when a DELETE of the id came first (the PATCH answers
 * 404; `removed`: what finishing the DELETE deleted), 'superseded' when another PATCH came
 * first, re-keying or changing in place what this one read (this one reads again and applies
 * after it, so neither change is lost).
 */
export async function replaceKeyed<T extends TenantDoc & { id: number }>(
  tenant: Tenant,
  name: CollectionName,
  unchanged: readonly Filter<T>[],
  doc: T,
): Promise<{ outcome: Replaced; removed: T[] }> {
  const documents = tenant.collection<T>(name);
  const removed = await finishIfDeleted<T>(tenant, name, doc.id);
  if (removed) return { outcome: 'deleted', removed };
  if ((await documents.deleteMany({ $or: [...unchanged], id: doc.id } as Filter<T>)).deletedCount > 0) return { outcome: 'replaced', removed: [] };
  await documents.deleteMany({ _id: doc._id, id: doc.id } as Filter<T>);
  return { outcome: 'superseded', removed: [] };
}

/**
 * DELETE of `id`: whether it deleted the id (false: no such id here, or another DELETE took it
 * first), and the documents it deleted itself (a PATCH that meets its mark may delete some).
 */
export async function deleteKeyed<T extends TenantDoc & { id: number }>(
  tenant: Tenant,
  name: CollectionName,
  id: number,
): Promise<{ deleted: boolean; documents: T[] }> {
  const documents = tenant.collection<T>(name);
  // An id with no document is not marked: it may not be claimed yet.
  if (!(await documents.has({ id } as Filter<T>))) return { deleted: false, documents: [] };
  let marked = true;
  try {
    await marks(tenant).insertOne({ _id: markOf(tenant, name, id) });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    marked = false; // another DELETE's, under way or dead: this one finishes it too
  }
  const deleted = await deleteAll(documents, id);
  return { deleted: marked || deleted.length > 0, documents: deleted };
}

/**
 * Deletes every document of `id`, one at a time so that the caller knows each (a PATCH's new one
 * included), until a read finds none: a delete that finds nothing is no proof, as a PATCH or a
 * cascade may have taken its target while another document of the id stands.
 */
async function deleteAll<T extends TenantDoc & { id: number }>(documents: TenantCollection<T>, id: number): Promise<T[]> {
  const deleted: T[] = [];
  while (await documents.has({ id } as Filter<T>)) {
    const doc = await documents.findOneAndDelete({ id } as Filter<T>);
    if (doc) deleted.push(doc as T);
  }
  return deleted;
}
