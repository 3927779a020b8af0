import { COLLECTIONS, type RuleDoc, type UserDoc } from '../db/collections';
import { readInPieces } from '../db/dialect';
import type { Tenant } from '../db/tenant';
import { emailDomain, ruleDomain } from './email-domain';

export { emailDomain, ruleDomain };

/**
 * How a membership rule (docs/api.md, `membership-rules`) matches a learner: a learner whose
 * email has `domain` joins `group`. The one matcher that events, the batch path, "apply to
 * existing learners" and `cag import` use.
 */

/**
 * The one matcher: each of `users` whose email's domain has a rule in the organization, with that
 * rule. One read, by the rules' domains (the `{org, domain}` index, never a scan of the rules).
 */
export async function matchRules<U extends Pick<UserDoc, 'id' | 'email'>>(
  tenant: Tenant,
  users: readonly U[],
): Promise<{ user: U; rule: Pick<RuleDoc, 'domain' | 'group'> }[]> {
  const withDomain = users.flatMap((user) => {
    const domain = emailDomain(user.email);
    return domain === null ? [] : [{ user, domain: ruleDomain(domain) }];
  });
  if (withDomain.length === 0) return [];
  const domains = [...new Set(withDomain.map((u) => u.domain))];
  const found = await readInPieces(domains, (piece) =>
    tenant
      .collection<RuleDoc>(COLLECTIONS.rules)
      .find({ domain: { $in: piece } }, { projection: { _id: 0, domain: 1, group: 1 } })
      .toArray(),
  );
  const rules = new Map(found.map((r) => [r.domain, r]));
  return withDomain.flatMap(({ user, domain }) => {
    const rule = rules.get(domain);
    return rule ? [{ user, rule }] : [];
  });
}
