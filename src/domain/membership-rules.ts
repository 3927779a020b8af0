import { COLLECTIONS, type RuleDoc, type UserDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { Conflict, doesNotExist, fieldError } from '../errors';
import { groupExists } from './groups';
import { joinByRule } from './learners';
import { matchRules, ruleDomain, ruleKey } from './rule-match';

/**
 * Membership rules (docs/api.md, `membership-rules`): a learner whose email has `domain` joins
 * `group` at their activation (docs/event-core.md). Their records and "apply to existing
 * learners" are here; how a rule matches a learner is rule-match.ts's.
 */

/**
 * Applies one rule to the learners already registered: every active learner of the organization
 * whose email's domain is the rule's and who has no membership joins the rule's group, as an
 * entry of their history (learners.ts `joinByRule`: a learner retired, moved or given a group
 * meanwhile is folded with it). Returns how many joined (0 when run again). Learners are read a
 * page at a time by public id, never all at once, and matched as an event matches them.
 */
export async function applyRuleToExistingUsers(tenant: Tenant, rule: Pick<RuleDoc, 'domain' | 'group'>, pageSize = 500): Promise<number> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  let created = 0;
  let after = 0;
  for (;;) {
    const page = await users
      .find({ id: { $gt: after }, is_active: true }, { projection: { id: 1, email: 1, m: 1 } })
      .sort({ id: 1 })
      .limit(pageSize)
      .toArray();
    if (page.length === 0) return created;
    after = page[page.length - 1]!.id;
    const matching = (await matchRules(tenant, page)).filter((m) => m.rule.domain === ruleDomain(rule.domain) && !m.user.m);
    for (const m of matching) if (await joinByRule(tenant.db, tenant.org, m.user.id, rule.group)) created++;
  }
}

const domainTaken = () => new Conflict({ domain: ['A membership rule for this domain already exists.'] });
const rules = (tenant: Tenant) => tenant.collection<RuleDoc>(COLLECTIONS.rules);

async function checkGroup(tenant: Tenant, group: number | undefined) {
  if (group !== undefined && !(await groupExists(tenant, group))) throw fieldError('group', doesNotExist(group));
}

/** Inserts a rule, refusing a domain that has one (Invalid on `domain`). */
async function insert(tenant: Tenant, doc: Omit<RuleDoc, 'org' | '_id'>): Promise<RuleDoc> {
  try {
    return await rules(tenant).insertOne({ _id: ruleKey(tenant.org, doc.domain), ...doc });
  } catch (err) {
    if (isDuplicateKey(err)) throw domainTaken();
    throw err;
  }
}

const taken = (tenant: Tenant, domain: string) => rules(tenant).has({ _id: ruleKey(tenant.org, domain) });

export async function createRule(tenant: Tenant, input: { name: string; domain: string; group: number }): Promise<RuleDoc> {
  await checkGroup(tenant, input.group);
  const domain = ruleDomain(input.domain);
  // Checked first so that a refused request claims no id.
  if (await taken(tenant, domain)) throw domainTaken();
  const id = await tenant.nextId('membership_rules');
  return insert(tenant, { id, name: input.name, domain, group: input.group });
}

/**
 * A new domain is a new `_id`: the new document is inserted (refused when the domain has a
 * rule) and then the old one deleted; a crash in between leaves both, with one id, until the
 * next PATCH or DELETE of that id. Null: no rule `id` here.
 */
export async function updateRule(tenant: Tenant, id: number, patch: { name?: string; domain?: string; group?: number }): Promise<RuleDoc | null> {
  await checkGroup(tenant, patch.group);
  const old = await rules(tenant).findOne({ id });
  if (!old) return null;
  const domain = patch.domain === undefined ? old.domain : ruleDomain(patch.domain);
  const changes = { name: patch.name ?? old.name, group: patch.group ?? old.group };
  if (domain === old.domain) return rules(tenant).findOneAndUpdate({ _id: old._id }, { $set: changes });
  if (await taken(tenant, domain)) throw domainTaken();
  const doc = await insert(tenant, { id, domain, ...changes });
  await rules(tenant).deleteMany({ id, _id: { $ne: doc._id } });
  return doc;
}

/** Deletes every document of the id (normally one; two after an interrupted PATCH). */
export async function deleteRule(tenant: Tenant, id: number): Promise<boolean> {
  return (await rules(tenant).deleteMany({ id })).deletedCount > 0;
}

/** Applies rule `id` to the organization's existing users: the memberships created, or null for an unknown id. */
export async function applyRule(tenant: Tenant, id: number): Promise<number | null> {
  const rule = await rules(tenant).findOne({ id });
  return rule && applyRuleToExistingUsers(tenant, rule);
}
