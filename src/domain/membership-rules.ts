import { COLLECTIONS, type RuleDoc, type UserDoc } from '../db/collections';
import { isDuplicateKey } from '../db/driver-errors';
import type { Tenant } from '../db/tenant';
import { Conflict, doesNotExist, fieldError, Invalid } from '../errors';
import { groupExists, liveGroups } from './groups';
import { joinByRule } from './learners';
import { deleteKeyed, finishIfDeleted, replaceKeyed } from './rekey';
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

/** Inserts a rule, refusing a domain that has one (Invalid on `domain`). */
async function insert(tenant: Tenant, doc: Omit<RuleDoc, 'org' | '_id'>): Promise<RuleDoc> {
  try {
    return await rules(tenant).insertOne({ _id: ruleKey(tenant.org, doc.domain), ...doc });
  } catch (err) {
    if (isDuplicateKey(err)) throw domainTaken();
    throw err;
  }
}

const taken = (tenant: Tenant, domain: string) => rules(tenant).has({ domain });

export async function createRule(tenant: Tenant, input: { name: string; domain: string; group: number }): Promise<RuleDoc> {
  await checkGroup(tenant, input.group);
  const domain = ruleDomain(input.domain);
  // Checked first so that a refused request claims no id.
  if (await taken(tenant, domain)) throw domainTaken();
  const id = await tenant.nextId('membership_rules');
  return ofLiveGroup(tenant, await insert(tenant, { id, name: input.name, domain, group: input.group }));
}

/**
 * A rule hangs off its group (docs/event-core.md, "Children"): written, then its group read again.
 * A deletion of the group that ran meanwhile may have swept its rules before this one was
 * written, so the rule removes itself and the request names no group (as if the deletion came first).
 */
async function ofLiveGroup(tenant: Tenant, doc: RuleDoc): Promise<RuleDoc> {
  if (await groupExists(tenant, doc.group)) return doc;
  await rules(tenant).deleteMany({ _id: doc._id, id: doc.id, group: doc.group });
  throw fieldError('group', doesNotExist(doc.group));
}

/**
 * A new domain is a new `_id`: the new document is inserted (refused when the domain has a
 * rule) and then the old one deleted (src/domain/rekey.ts). Null: no rule `id` here (or a
 * DELETE of it came first).
 */
export async function updateRule(tenant: Tenant, id: number, patch: { name?: string; domain?: string; group?: number }): Promise<RuleDoc | null> {
  // The id first (404 before 400, as DRF's get_object before its serializer), and a DELETE that died after its mark finished.
  const read = await rules(tenant).find({ id }).toArray();
  if (read.length === 0 || (await finishIfDeleted(tenant, COLLECTIONS.rules, id))) return null;
  await checkGroup(tenant, patch.group);
  const domain = patch.domain === undefined ? read[0]!.domain : ruleDomain(patch.domain);
  // The rule's document of that domain when it has one (another PATCH of the rule may have made it).
  const old = read.find((r) => r.domain === domain) ?? read[0]!;
  const changes = { name: patch.name ?? old.name, group: patch.group ?? old.group };
  if (domain === old.domain) {
    // By `id` too: after a DELETE, the domain may be another rule's.
    const updated = await rules(tenant).findOneAndUpdate({ _id: old._id, id }, { $set: changes });
    // Gone since the read: deleted (404), or re-keyed by another PATCH (applied to its new document).
    if (!updated) return updateRule(tenant, id, patch);
    // Moved onto a group deleted meanwhile: the group's deletion takes it, as had it come after.
    if (patch.group !== undefined && !(await groupExists(tenant, updated.group)))
      await rules(tenant).deleteMany({ _id: updated._id, id, group: updated.group });
    return updated;
  }
  // The domain is this rule's already when another PATCH of it inserted it after the read.
  const isOwn = () => rules(tenant).has({ _id: ruleKey(tenant.org, domain), id });
  if (await taken(tenant, domain)) {
    if (await isOwn()) return updateRule(tenant, id, patch);
    throw domainTaken();
  }
  let doc: RuleDoc;
  try {
    doc = await ofLiveGroup(tenant, await insert(tenant, { id, domain, ...changes }));
  } catch (err) {
    if (err instanceof Conflict && (await isOwn())) return updateRule(tenant, id, patch);
    // Its group deleted meanwhile, and the rule with it: as had the deletion come first.
    if (err instanceof Invalid && patch.group === undefined && !(await rules(tenant).has({ id }))) return null;
    throw err;
  }
  // The documents read are replaced only as they were read: a change made in place meanwhile makes this PATCH read again.
  const { outcome } = await replaceKeyed(
    tenant,
    COLLECTIONS.rules,
    read.map((r) => ({ _id: r._id, name: r.name, group: r.group })),
    doc,
  );
  if (outcome === 'deleted') return null;
  // Superseded: another PATCH of the rule came first; this one applies after it.
  return outcome === 'replaced' ? doc : updateRule(tenant, id, patch);
}

/** Deletes every document of the id (normally one; two while a PATCH re-keys it). */
export async function deleteRule(tenant: Tenant, id: number): Promise<boolean> {
  return (await deleteKeyed(tenant, COLLECTIONS.rules, id)).deleted;
}

/** Applies rule `id` to the organization's existing users: the memberships created, or null for an unknown id. */
export async function applyRule(tenant: Tenant, id: number): Promise<number | null> {
  const rule = await rules(tenant).findOne({ id });
  return rule && applyRuleToExistingUsers(tenant, rule);
}
