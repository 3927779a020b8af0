import { COLLECTIONS, type RuleDoc } from '../../db/collections';
import { isDuplicateKey } from '../../db/driver-errors';
import { getOne, hasOne, listPage, type Page } from '../../db/records';
import type { Tenant } from '../../db/tenant';
import { applyRuleToExistingUsers } from '../../domain/membership-rules';
import { Conflict, doesNotExist, fieldError } from '../../errors';
import { type Infer, toInteger } from '../../validation';
import { groupsRepository } from '../groups/repository';
import type { ruleCreateSchema, ruleListQuerySchema, rulePatchSchema, ruleSchema } from './schema';

export type Rule = Infer<typeof ruleSchema>;
export type RuleListQuery = Infer<typeof ruleListQuerySchema>;

const domainTaken = () => new Conflict({ domain: ['A membership rule for this domain already exists.'] });

export function rulesRepository(tenant: Tenant) {
  const rules = tenant.collection<RuleDoc>(COLLECTIONS.rules);
  /** One rule per domain per organization: the `_id` is `org|domain`. */
  const ruleKey = (domain: string) => `${tenant.org}|${domain}`;

  /** Adds the group; one whose deletion is still cascading shows blank. */
  async function present(docs: RuleDoc[]): Promise<Rule[]> {
    const groups = await groupsRepository(tenant).refs(docs.map((d) => d.group));
    return docs.map((d) => ({ id: d.id, name: d.name, domain: d.domain, group: groups.get(d.group) ?? { id: d.group, name: '' } }));
  }

  async function checkGroup(group: number | undefined) {
    if (group !== undefined && !(await groupsRepository(tenant).exists(group))) throw fieldError('group', doesNotExist(group));
  }

  /** Inserts a rule, refusing a domain that has one (400 on `domain`). */
  async function insert(doc: Omit<RuleDoc, 'org'>): Promise<RuleDoc> {
    try {
      return await rules.insertOne(doc);
    } catch (err) {
      if (isDuplicateKey(err)) throw domainTaken();
      throw err;
    }
  }

  function taken(domain: string) {
    return hasOne(rules, { _id: ruleKey(domain) });
  }

  return {
    list(page: Page, query: RuleListQuery = {}): Promise<{ count: number; results: Rule[] }> {
      const group = toInteger(query.group);
      return listPage(rules, page, group === undefined ? {} : { group }, present);
    },

    get(id: number): Promise<Rule | null> {
      return getOne(rules, { id }, present);
    },

    exists(id: number): Promise<boolean> {
      return hasOne(rules, { id });
    },

    async create(input: Infer<typeof ruleCreateSchema>): Promise<Rule> {
      await checkGroup(input.group);
      const domain = input.domain.toLowerCase();
      // Checked first so that a refused request claims no id.
      if (await taken(domain)) throw domainTaken();
      const id = await tenant.nextId('membership_rules');
      return (await present([await insert({ _id: ruleKey(domain), id, name: input.name, domain, group: input.group })]))[0]!;
    },

    /**
     * A new domain is a new `_id`: the new document is inserted (refused when the domain has a
     * rule) and then the old one deleted; a crash in between leaves both, with one id, until the
     * next PATCH or DELETE of that id.
     */
    async update(id: number, patch: Infer<typeof rulePatchSchema>): Promise<Rule | null> {
      await checkGroup(patch.group);
      const old = await rules.findOne({ id });
      if (!old) return null;
      const domain = patch.domain?.toLowerCase() ?? old.domain;
      const changes = { name: patch.name ?? old.name, group: patch.group ?? old.group };
      if (domain === old.domain) {
        const doc = await rules.findOneAndUpdate({ _id: old._id }, { $set: changes });
        return doc && (await present([doc]))[0]!;
      }
      if (await taken(domain)) throw domainTaken();
      const doc = await insert({ _id: ruleKey(domain), id, domain, ...changes });
      await rules.deleteMany({ id, _id: { $ne: doc._id } });
      return (await present([doc]))[0]!;
    },

    /** Deletes every document of the id (normally one; two after an interrupted PATCH). */
    async delete(id: number): Promise<boolean> {
      return (await rules.deleteMany({ id })).deletedCount > 0;
    },
  };
}

export type RulesRepository = ReturnType<typeof rulesRepository>;

/** Applies rule `id` to the organization's existing users: the memberships created, or null for an unknown id. */
export async function applyRule(tenant: Tenant, id: number): Promise<number | null> {
  const rule = await tenant.collection<RuleDoc>(COLLECTIONS.rules).findOne({ id });
  return rule && applyRuleToExistingUsers(tenant, rule);
}
