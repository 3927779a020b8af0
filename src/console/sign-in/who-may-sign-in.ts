import type { Principal } from '../../http/auth';
import { ADMIN_ROLE_PREFIX } from '../../http/lms-tokens';

/**
 * Who may use the console after signing in through the LMS: platform staff (`administrator`),
 * or an administrator of at least one organization (a `course_access_groups_admin:<org>` role).
 * Null when they may; else why not, in words for them.
 */
export function whyNotConsoleUser(principal: Principal): string | null {
  if (principal.isStaff || principal.administeredOrgs.length > 0) return null;
  return (
    `Your LMS account (user ${principal.userId}) administers no organization in Course Access Groups and is not platform staff, ` +
    `so the console has nothing it may show you. An LMS administrator can give you the role ${ADMIN_ROLE_PREFIX}<organization>.`
  );
}
