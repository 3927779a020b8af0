import { COLLECTIONS, type GroupDoc } from '../../db/collections';
import { getOne, hasOne, listPage, type Page } from '../../db/records';
import type { Tenant } from '../../db/tenant';
import { deleteGroup } from '../../domain/delete-group';
import type { Infer } from '../../validation';
import type { groupCreateSchema, groupPatchSchema, groupSchema } from './schema';

export type Group = Infer<typeof groupSchema>;
export type GroupRef = Pick<Group, 'id' | 'name'>;

const toGroup = (d: GroupDoc): Group => ({ id: d.id, name: d.name, description: d.description });
const toGroups = (docs: GroupDoc[]) => docs.map(toGroup);

export function groupsRepository(tenant: Tenant) {
  const groups = tenant.collection<GroupDoc>(COLLECTIONS.groups);
  return {
    list(page: Page): Promise<{ count: number; results: Group[] }> {
      return listPage(groups, page, {}, toGroups);
    },

    get(id: number): Promise<Group | null> {
      return getOne(groups, { _id: String(id) }, toGroups);
    },

    async create(input: Infer<typeof groupCreateSchema>): Promise<Group> {
      const id = await tenant.nextId('groups');
      return toGroup(await groups.insertOne({ _id: String(id), id, ...input }));
    },

    async update(id: number, patch: Infer<typeof groupPatchSchema>): Promise<Group | null> {
      const doc = await groups.findOneAndUpdate({ _id: String(id) }, { $set: patch });
      return doc && toGroup(doc);
    },

    /** With its memberships, rules and course links (src/domain/delete-group.ts). */
    delete(id: number): Promise<boolean> {
      return deleteGroup(tenant, id);
    },

    exists(id: number): Promise<boolean> {
      return hasOne(groups, { _id: String(id) });
    },

    /** `{id, name}` of each of `ids` that exists in this organization, for embedding in other resources. */
    async refs(ids: Iterable<number>): Promise<Map<number, GroupRef>> {
      const docs = await groups.findByIds([...ids].map(String), { projection: { id: 1, name: 1 } });
      return new Map([...docs.values()].map((d) => [d.id, { id: d.id, name: d.name }]));
    },
  };
}

export type GroupsRepository = ReturnType<typeof groupsRepository>;
