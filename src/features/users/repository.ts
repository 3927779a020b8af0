import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../../db/collections';
import type { Tenant } from '../../db/tenant';
import { hasOne, listPage, type Page } from '../../db/records';
import { searchFilter } from '../../db/search';
import { toBoolean, toInteger, type Infer } from '../../validation';
import { groupsRepository } from '../groups/repository';
import type { userListQuerySchema, userRefSchema, userSchema } from './schema';

export type User = Infer<typeof userSchema>;
export type UserRef = Infer<typeof userRefSchema>;
export type UserListQuery = Infer<typeof userListQuerySchema>;

/** Site administrators are not part of the resource (SPEC section 3). */
const notSiteAdmin = { is_site_admin: { $ne: true } } as const;

export function usersRepository(tenant: Tenant) {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);

  /** Adds each user's membership (`_id` of a membership is the user id: key lookups). */
  async function present(docs: UserDoc[]): Promise<User[]> {
    const byUser = await memberships.findByIds(
      docs.map((d) => d._id),
      { projection: { id: 1, group: 1 } },
    );
    const groups = await groupsRepository(tenant).refs([...byUser.values()].map((m) => m.group));
    return docs.map((d) => {
      const m = byUser.get(d._id);
      const group = m && groups.get(m.group);
      return {
        id: d.id,
        username: d.username,
        name: d.name,
        email: d.email,
        membership: m && group ? { id: m.id, group } : null,
      };
    });
  }

  return {
    async list(page: Page, query: UserListQuery): Promise<{ count: number; results: User[] }> {
      const filter: Record<string, unknown> = { ...notSiteAdmin, ...searchFilter(['username', 'name', 'email'], query.search) };
      if (query.email_exact) filter.email_lower = query.email_exact.toLowerCase();
      const group = toInteger(query.group);
      const noGroup = toBoolean(query.no_group);
      const ids: { $in?: string[]; $nin?: string[] } = {};
      if (group !== undefined) {
        ids.$in = (await memberships.find({ group }, { projection: { _id: 1 } }).toArray()).map((m) => m._id);
      }
      if (noGroup !== undefined) {
        const members = (await memberships.find({}, { projection: { _id: 1 } }).toArray()).map((m) => m._id);
        if (noGroup) ids.$nin = members;
        else ids.$in ??= members; // a group's members are members
      }
      if (ids.$in || ids.$nin) filter._id = ids;
      return listPage(users, page, filter, present);
    },

    async get(id: number): Promise<User | null> {
      const doc = await users.findOne({ _id: String(id) });
      return doc && doc.is_site_admin !== true ? (await present([doc]))[0]! : null;
    },

    /** Whether the user exists in this organization (site administrators included). */
    exists(id: number): Promise<boolean> {
      return hasOne(users, { _id: String(id) });
    },

    /** `{id, username, email}` of each of `ids` that exists in this organization. */
    async refs(ids: Iterable<number>): Promise<Map<number, UserRef>> {
      const docs = await users.findByIds([...ids].map(String), { projection: { id: 1, username: 1, email: 1 } });
      return new Map([...docs.values()].map((d) => [d.id, { id: d.id, username: d.username, email: d.email }]));
    },
  };
}

export type UsersRepository = ReturnType<typeof usersRepository>;
