import { COLLECTIONS, type GroupDoc } from '../../db/collections';
import type { Page, Tenant } from '../../db/tenant';
import type { Infer } from '../../validation';
import { getOne, listPage } from '../queries';
import type { groupSchema } from './schema';

type Group = Infer<typeof groupSchema>;
export type GroupRef = Pick<Group, 'id' | 'name'>;

const toGroup = (d: GroupDoc): Group => ({ id: d.id, name: d.name, description: d.description });
const toGroups = (docs: GroupDoc[]) => docs.map(toGroup);

/** Reads of the `course-access-groups` resource; writes are src/domain/groups.ts's. */
export function groupQueries(tenant: Tenant) {
  const groups = tenant.collection<GroupDoc>(COLLECTIONS.groups);
  return {
    list(page: Page): Promise<{ count: number; results: Group[] }> {
      return listPage(groups, page, {}, toGroups);
    },

    get(id: number): Promise<Group | null> {
      return getOne(groups, { _id: String(id) }, toGroups);
    },

    exists(id: number): Promise<boolean> {
      return groups.has({ _id: String(id) });
    },

    async show(doc: GroupDoc): Promise<Group> {
      return toGroup(doc);
    },

    /** `{id, name}` of each of `ids` that exists in this organization, for embedding in other resources. */
    async refs(ids: Iterable<number>): Promise<Map<number, GroupRef>> {
      const docs = await groups.findByIds([...ids].map(String), { projection: { id: 1, name: 1 } });
      return new Map([...docs.values()].map((d) => [d.id, { id: d.id, name: d.name }]));
    },
  };
}
