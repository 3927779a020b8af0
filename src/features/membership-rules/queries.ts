import { COLLECTIONS, type RuleDoc } from '../../db/collections';
import type { Page, Tenant } from '../../db/tenant';
import { type Infer, toInteger } from '../../validation';
import { groupQueries } from '../groups/queries';
import { getOne, listPage } from '../queries';
import type { ruleListQuerySchema, ruleSchema } from './schema';

type Rule = Infer<typeof ruleSchema>;
type RuleListQuery = Infer<typeof ruleListQuerySchema>;

/** Reads of the `membership-rules` resource; writes and matching are src/domain/membership-rules.ts's. */
export function ruleQueries(tenant: Tenant) {
  const rules = tenant.collection<RuleDoc>(COLLECTIONS.rules);

  /** Adds the group; one whose deletion is still cascading shows blank. */
  async function present(docs: RuleDoc[]): Promise<Rule[]> {
    const groups = await groupQueries(tenant).refs(docs.map((d) => d.group));
    return docs.map((d) => ({ id: d.id, name: d.name, domain: d.domain, group: groups.get(d.group) ?? { id: d.group, name: '' } }));
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
      return rules.has({ id });
    },

    show: async (doc: RuleDoc) => (await present([doc]))[0]!,
  };
}
