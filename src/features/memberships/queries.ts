import { COLLECTIONS, type MembershipDoc } from '../../db/collections';
import type { Page, Tenant } from '../../db/tenant';
import { type Infer, toInteger } from '../../validation';
import { groupQueries } from '../groups/queries';
import { getOne, listPage } from '../queries';
import { userQueries } from '../users/queries';
import type { membershipListQuerySchema, membershipSchema } from './schema';

type Membership = Infer<typeof membershipSchema>;
type MembershipListQuery = Infer<typeof membershipListQuerySchema>;

/** Reads of the `memberships` resource; writes are src/domain/memberships.ts's. */
export function membershipQueries(tenant: Tenant) {
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);

  /** Adds the user and group; a reference whose record a cascade is removing shows blank. */
  async function present(docs: MembershipDoc[]): Promise<Membership[]> {
    const [users, groups] = await Promise.all([userQueries(tenant).refs(docs.map((d) => d.user)), groupQueries(tenant).refs(docs.map((d) => d.group))]);
    return docs.map((d) => ({
      id: d.id,
      user: users.get(d.user) ?? { id: d.user, username: '', email: '' },
      group: groups.get(d.group) ?? { id: d.group, name: '' },
    }));
  }

  return {
    list(page: Page, query: MembershipListQuery = {}): Promise<{ count: number; results: Membership[] }> {
      const group = toInteger(query.group);
      return listPage(memberships, page, group === undefined ? {} : { group }, present);
    },

    get(id: number): Promise<Membership | null> {
      return getOne(memberships, { id }, present);
    },

    exists(id: number): Promise<boolean> {
      return memberships.has({ id });
    },

    show: async (doc: MembershipDoc) => (await present([doc]))[0]!,
  };
}
