import { COLLECTIONS, type RuleDoc, type UserDoc } from '../db/collections';
import { refusingDuplicates } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { Conflict, doesNotExist, fieldError } from '../errors';
import { deleteById, dropSecondDocuments } from './by-id';
import { createChild, hangOff } from './children';
import { groupExists, liveGroups } from './groups';
import { joinByRule } from './learners';
import { matchRules, ruleDomain } from './rule-match';

/**
 * Membership rules (docs/api.md, `membership-rules`): a learner whose email has `domain` joins
 * `group` at their activation (docs/event-core.md). Their records and "apply to existing
 * learners" are here; how a rule matches a learner is rule-match.ts's.
 */

/**
 * Applies one rule to the learners already registered: every active learner of the organization
 * whose email's domain is the rule's and who has no membership joins the rule's group, as an
 * entry of their history (learners.ts `joinByRule`: a learner retired, moved or given a group
 * meanwhile is folded with it). A record whose membership names a deleted group has none (the
 * fold reads it so; the group's deletion does not rewrite the records). Returns how many joined
 * (0 when run again). Learners are read a page at a time by public id, never all at once, and
 * matched as an event matches them.
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
    const live = await liveGroups(
      tenant,
      page.flatMap((u) => (u.m ? [u.m.group] : [])),
    );
    const matching = (await matchRules(tenant, page)).filter((m) => m.rule.domain === ruleDomain(rule.domain) && !(m.user.m && live.has(m.user.m.group)));
    for (const m of matching) if (await joinByRule(tenant.db, tenant.org, m.user.id, rule.group)) created++;
  }
}

const domainTaken = () => new Conflict({ domain: ['A membership rule for this domain already exists.'] });
const rules = (tenant: Tenant) => tenant.collection<RuleDoc>(COLLECTIONS.rules);

async function checkGroup(tenant: Tenant, group: number | undefined) {
  if (group !== undefined && !(await groupExists(tenant, group))) throw fieldError('group', doesNotExist(group));
}

export async function createRule(tenant: Tenant, input: { name: string; domain: string; group: number }): Promise<RuleDoc> {
  await checkGroup(tenant, input.group);
  const domain = ruleDomain(input.domain);
  // Checked first so that a refused request claims no id.
  if (await rules(tenant).has({ domain })) throw domainTaken();
  const id = await tenant.nextId('membership_rules');
  // Written under its group (children.ts): a deletion of the group that ran meanwhile takes it back, and the request names no group.
  return createChild(tenant, { kind: 'rule', id: String(id), courses: [], parents: { group: input.group } }, () =>
    refusingDuplicates(() => rules(tenant).insertOne({ _id: String(id), id, name: input.name, domain, group: input.group }), domainTaken),
  );
}

/**
 * One write of the rule's one document, found by its id (docs/decisions.md, "Links and rules by
 * id"): the domain's uniqueness is the `{org, domain}` index's. Null: no rule `id` here (or a
 * DELETE of it came first).
 */
export async function updateRule(tenant: Tenant, id: number, patch: { name?: string; domain?: string; group?: number }): Promise<RuleDoc | null> {
  // The id first (404 before 400, as DRF's get_object before its serializer).
  const read = await rules(tenant).findOne({ id });
  if (!read) return null;
  await dropSecondDocuments(tenant, COLLECTIONS.rules, read);
  await checkGroup(tenant, patch.group);
  const set = {
    ...(patch.name === undefined ? {} : { name: patch.name }),
    ...(patch.domain === undefined ? {} : { domain: ruleDomain(patch.domain) }),
    ...(patch.group === undefined ? {} : { group: patch.group }),
  };
  const write = () => refusingDuplicates(() => rules(tenant).findOneAndUpdate({ id }, { $set: set }), domainTaken);
  if (patch.group === undefined) return write();
  // Moved onto a group deleted meanwhile: the group's deletion takes it (children.ts), as had it come after.
  return (await hangOff(tenant, { kind: 'rule', id: read._id, courses: [], parents: {} }, write)).result;
}

/** Deletes the rule: one write (of two DELETEs at once, one answers 404). */
export async function deleteRule(tenant: Tenant, id: number): Promise<boolean> {
  return (await deleteById(tenant, COLLECTIONS.rules, id)).length > 0;
}

/** Applies rule `id` to the organization's existing users: the memberships created, or null for an unknown id. */
export async function applyRule(tenant: Tenant, id: number): Promise<number | null> {
  const rule = await rules(tenant).findOne({ id });
  return rule && applyRuleToExistingUsers(tenant, rule);
}
