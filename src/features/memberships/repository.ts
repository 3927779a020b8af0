import { COLLECTIONS, type MembershipDoc } from '../../db/collections';
import { getOne, hasOne, listPage, type Page } from '../../db/records';
import type { Tenant } from '../../db/tenant';
import { deleteMembership, insertMembershipIfAbsent, moveMembership } from '../../domain/memberships';
import { Conflict, doesNotExist, type FieldErrors, Invalid } from '../../errors';
import { type Infer, toInteger } from '../../validation';
import { groupsRepository } from '../groups/repository';
import { usersRepository } from '../users/repository';
import type { membershipCreateSchema, membershipListQuerySchema, membershipPatchSchema, membershipSchema } from './schema';

export type Membership = Infer<typeof membershipSchema>;
export type MembershipListQuery = Infer<typeof membershipListQuerySchema>;

const ALREADY_MEMBER = 'This user already has a membership.';

export function membershipsRepository(tenant: Tenant) {
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);

  /** Adds the user and group; a reference whose record a cascade is removing shows blank. */
  async function present(docs: MembershipDoc[]): Promise<Membership[]> {
    const [users, groups] = await Promise.all([usersRepository(tenant).refs(docs.map((d) => d.user)), groupsRepository(tenant).refs(docs.map((d) => d.group))]);
    return docs.map((d) => ({
      id: d.id,
      user: users.get(d.user) ?? { id: d.user, username: '', email: '' },
      group: groups.get(d.group) ?? { id: d.group, name: '' },
    }));
  }

  async function checkGroup(group: number | undefined, errors: FieldErrors) {
    if (group !== undefined && !(await groupsRepository(tenant).exists(group))) errors.group = [doesNotExist(group)];
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
      return hasOne(memberships, { id });
    },

    /** 400 on `user` or `group` when either is unknown here, or when the user already has a membership. */
    async create(input: Infer<typeof membershipCreateSchema>): Promise<Membership> {
      const errors: FieldErrors = {};
      if (!(await usersRepository(tenant).exists(input.user))) errors.user = [doesNotExist(input.user)];
      // Checked before inserting, so a refused request claims no id; the insert's own duplicate
      // check still settles a race with a concurrent creation.
      else if (await memberships.findById(String(input.user), { projection: { _id: 1 } })) errors.user = [ALREADY_MEMBER];
      await checkGroup(input.group, errors);
      if (Object.keys(errors).length > 0) throw new Invalid(errors);
      const doc = await insertMembershipIfAbsent(tenant, { user: input.user, group: input.group, automatic: false });
      if (!doc) throw new Conflict({ user: [ALREADY_MEMBER] });
      return (await present([doc]))[0]!;
    },

    async update(id: number, patch: Infer<typeof membershipPatchSchema>): Promise<Membership | null> {
      const errors: FieldErrors = {};
      await checkGroup(patch.group, errors);
      if (Object.keys(errors).length > 0) throw new Invalid(errors);
      const doc = patch.group === undefined ? await memberships.findOne({ id }) : await moveMembership(tenant, id, patch.group);
      return doc && (await present([doc]))[0]!;
    },

    async delete(id: number): Promise<boolean> {
      return deleteMembership(tenant, { id });
    },
  };
}

export type MembershipsRepository = ReturnType<typeof membershipsRepository>;
