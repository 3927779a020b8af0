import type { Filter } from 'mongodb';
import type { CollectionName, TenantDoc } from '../db/collections';
import type { Tenant } from '../db/tenant';

/**
 * Links and rules are found by their public `id` and are one document each: a new one is stored
 * under `_id` `String(id)`, and a PATCH or DELETE is one write of that document, found by `id`.
 * What must be unique (a link's (course, group), a rule's domain) is a unique index's to refuse
 * (src/db/collections.ts). A document stored by version 0.1.0 keeps the `_id` 0.1.0 last gave it
 * (`course|group`, `org|domain`), which no reader takes for what it joins; it is its change
 * events' subject for life (docs/events-published.md).
 *
 * Version 0.1.0 changed a link's pair or a rule's domain by inserting a new document and then
 * deleting the old one, so one that died in between left two documents of one id. The next
 * PATCH of the id keeps the document it read and deletes the other, first (no process of this
 * version writes a second document of an id, and a 0.1.0 process stops writing once this
 * version's upgrades raised the stored shape: docs/operations.md); a DELETE deletes both
 * (`deleteById`).
 */
export async function dropSecondDocuments<T extends TenantDoc & { id: number }>(tenant: Tenant, name: CollectionName, kept: T): Promise<T[]> {
  const documents = tenant.collection<T>(name);
  const others = (await documents.find({ id: kept.id, _id: { $ne: kept._id } } as Filter<T>).toArray()) as T[];
  for (const doc of others) await documents.deleteMany({ _id: doc._id, id: kept.id } as Filter<T>);
  return others;
}

/** DELETE of `id`: the documents it deleted (none: no such id here, or another DELETE took it first: 404). */
export async function deleteById<T extends TenantDoc & { id: number }>(tenant: Tenant, name: CollectionName, id: number): Promise<T[]> {
  const documents = tenant.collection<T>(name);
  const deleted: T[] = [];
  // One document; two only where 0.1.0 left them.
  for (let doc = await documents.findOneAndDelete({ id } as Filter<T>); doc; doc = await documents.findOneAndDelete({ id } as Filter<T>))
    deleted.push(doc as T);
  return deleted;
}
