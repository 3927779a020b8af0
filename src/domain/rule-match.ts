import { COLLECTIONS, type RuleDoc, type UserDoc } from '../db/collections';
import type { Tenant } from '../db/tenant';
import { emailDomain, ruleDomain } from './email-domain';

export { emailDomain, ruleDomain };

/**
 * How a membership rule (docs/api.md, `membership-rules`) matches a learner: a learner whose
 * email has `domain` joins `group`. The one matcher that events, the batch path, "apply to
 * existing learners" and `cag import` use.
 */

/** A rule's `_id`: one rule per domain per organization is the primary key. */
export const ruleKey = (org: string, domain: string) => `${org}|${ruleDomain(domain)}`;

/**
 * The one matcher: each of `users` whose email's domain has a rule in the organization, with that
 * rule. One read, by the rules' keys (a primary-key lookup per domain, never a scan of the rules).
 */
export async function matchRules<U extends Pick<UserDoc, 'id' | 'email'>>(
  tenant: Tenant,
  users: readonly U[],
): Promise<{ user: U; rule: Pick<RuleDoc, 'domain' | 'group'> }[]> {
  const keyed = users.flatMap((user) => {
    const domain = emailDomain(user.email);
    return domain === null ? [] : [{ user, key: ruleKey(tenant.org, domain) }];
  });
  if (keyed.length === 0) return [];
  const rules = await tenant.collection<RuleDoc>(COLLECTIONS.rules).findByIds(
    keyed.map((k) => k.key),
    { projection: { domain: 1, group: 1 } },
  );
  return keyed.flatMap(({ user, key }) => {
    const rule = rules.get(key);
    return rule ? [{ user, rule }] : [];
  });
}
