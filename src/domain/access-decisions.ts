import type { Infer } from '../validation';

/**
 * Access decisions (docs/api.md): the rule, a pure function of the facts the access feature
 * reads (src/features/access/queries.ts). The decision's schema is here, beside the rule that
 * makes it; the feature's schemas and OpenAPI use it.
 */

export const DECISION_REASONS = ['feature_disabled', 'public', 'no_access', 'staff', 'site_admin', 'group'] as const;

export const decisionSchema = {
  type: 'object',
  properties: {
    allowed: { type: 'boolean' },
    reason: { type: 'string', enum: DECISION_REASONS },
  },
  required: ['allowed', 'reason'],
  additionalProperties: false,
} as const;

type Decision = Infer<typeof decisionSchema>;

/** What the decision needs to know about the learner (the UserDoc read model). */
export interface UserFacts {
  isActive: boolean;
  /** Platform staff. */
  isStaff: boolean;
  /** Site administrator of `org`. */
  isSiteAdmin: boolean;
  org: string;
}

/** Everything an access decision (docs/api.md) looks at for one (course, learner) pair, all read in the course's organization. */
export interface AccessFacts {
  courseOrg: string;
  /** The organization's ENABLE_COURSE_ACCESS_GROUPS (false when never set). */
  featureEnabled: boolean;
  isPublic: boolean;
  /** Null for no user_id or a user unknown in the course's organization. */
  user: UserFacts | null;
  /** The learner's group is linked to the course. */
  memberOfLinkedGroup: boolean;
}

/**
 * The seven rules of an access decision (docs/api.md), first match wins. Pure: the same facts always give the same decision,
 * and it is the same for all four actions (the contract gives them one rule list).
 */
export function decide(f: AccessFacts): Decision {
  if (!f.featureEnabled) return { allowed: true, reason: 'feature_disabled' };
  if (f.isPublic) return { allowed: true, reason: 'public' };
  if (!f.user?.isActive) return { allowed: false, reason: 'no_access' };
  if (f.user.isStaff) return { allowed: true, reason: 'staff' };
  if (f.user.isSiteAdmin && f.user.org === f.courseOrg) return { allowed: true, reason: 'site_admin' };
  if (f.memberOfLinkedGroup) return { allowed: true, reason: 'group' };
  return { allowed: false, reason: 'no_access' };
}

/**
 * Which facts a decision still needs, so the queries read no more than they must: the user
 * only past rules 1-2, the group link only past rules 3-5.
 */
export const needsUser = (f: Pick<AccessFacts, 'featureEnabled' | 'isPublic'>) => f.featureEnabled && !f.isPublic;
export const needsLink = (f: Pick<AccessFacts, 'featureEnabled' | 'isPublic' | 'user' | 'courseOrg'>) =>
  needsUser(f) && !!f.user && f.user.isActive && !f.user.isStaff && !(f.user.isSiteAdmin && f.user.org === f.courseOrg);
