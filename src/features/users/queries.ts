import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../../db/collections';
import { searchList } from '../../db/list-plan';
import { searchTerms, USER_SEARCH_FIELDS, userGrams } from '../../db/search-index';
import type { Page, Tenant } from '../../db/tenant';
import { repairUserGroupsLater } from '../../domain/list-facts';
import { type Infer, toBoolean, toInteger } from '../../validation';
import { groupQueries } from '../groups/queries';
import { listPage } from '../queries';
import type { userListQuerySchema, userRefSchema, userSchema } from './schema';

type User = Infer<typeof userSchema>;
type UserRef = Infer<typeof userRefSchema>;
type UserListQuery = Infer<typeof userListQuerySchema>;

/**
 * The list's filter as equalities on the user's own indexed fields (src/domain/list-facts.ts):
 * `listed` leaves out site administrators (docs/api.md), `grp` is the member's group (0: none),
 * `member` says whether there is one. Null when no user can match (group 0, or a group together
 * with no_group=true).
 */
function userListFilter(query: UserListQuery): Record<string, unknown> | null {
  const filter: Record<string, unknown> = { listed: 1 };
  const group = toInteger(query.group);
  const noGroup = toBoolean(query.no_group);
  if (group !== undefined) {
    if (group === 0 || noGroup === true) return null;
    filter.grp = group;
  } else if (noGroup !== undefined) {
    if (noGroup) filter.grp = 0;
    else filter.member = 1;
  }
  if (query.email_exact) filter.email_lower = query.email_exact.toLowerCase();
  return filter;
}

/** Reads of the read-only `users` resource (filled from LMS events by src/domain/users.ts). */
export function userQueries(tenant: Tenant) {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);

  /**
   * Adds each user's membership (`_id` of a membership is the user id: key lookups). A user
   * whose derived group disagrees with the membership just read (a writer died between the two)
   * is handed to the domain to derive again, after the answer: read repair, never a write here.
   */
  async function present(docs: UserDoc[]): Promise<User[]> {
    const byUser = await memberships.findByIds(
      docs.map((d) => d._id),
      { projection: { id: 1, group: 1 } },
    );
    repairUserGroupsLater(
      tenant,
      docs.filter((d) => d.grp !== undefined && d.grp !== (byUser.get(d._id)?.group ?? 0)).map((d) => d.id),
    );
    const groups = await groupQueries(tenant).refs([...byUser.values()].map((m) => m.group));
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
    /** Every filter is an index equality; a search is driven by its rarest trigram (src/db/list-plan.ts). */
    async list(page: Page, query: UserListQuery): Promise<{ count: number; results: User[] }> {
      const filter = userListFilter(query);
      if (!filter) return { count: 0, results: [] };
      if (searchTerms(query.search).length === 0) {
        if (filter.email_lower !== undefined) {
          // An email names one user (a few at most): read them all and page here.
          const all = await users.findFew(filter);
          return { count: all.length, results: await present(all.slice(page.offset, page.offset + page.limit)) };
        }
        return listPage(users, page, filter, present);
      }
      const { count, docs } = await searchList<UserDoc, number>(
        { records: users, grams: userGrams(tenant), fields: USER_SEARCH_FIELDS, filter, gramsImplyFilter: Object.keys(filter).length === 1 },
        query.search,
        page,
      );
      return { count, results: await present(docs) };
    },

    async get(id: number): Promise<User | null> {
      const doc = await users.findOne({ _id: String(id) });
      return doc && doc.is_site_admin !== true ? (await present([doc]))[0]! : null;
    },

    /** `{id, username, email}` of each of `ids` that exists in this organization. */
    async refs(ids: Iterable<number>): Promise<Map<number, UserRef>> {
      const docs = await users.findByIds([...ids].map(String), { projection: { id: 1, username: 1, email: 1 } });
      return new Map([...docs.values()].map((d) => [d.id, { id: d.id, username: d.username, email: d.email }]));
    },
  };
}
