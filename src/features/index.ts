import type { Feature } from '../http/feature';
import { accessFeature } from './access';
import { auditLogFeature } from './audit-log';
import { coursesFeature } from './courses';
import { groupCoursesFeature } from './group-courses';
import { groupsFeature } from './groups';
import { rulesFeature } from './membership-rules';
import { membershipsFeature } from './memberships';
import { publicCoursesFeature } from './public-courses';
import { siteConfigurationFeature } from './site-configuration';
import { usersFeature } from './users';

/** Admin resources (docs/api.md): staff or site administrators, scoped to one organization. */
export const adminFeatures: Feature[] = [
  groupsFeature,
  coursesFeature,
  groupCoursesFeature,
  publicCoursesFeature,
  membershipsFeature,
  usersFeature,
  rulesFeature,
  siteConfigurationFeature,
  auditLogFeature,
];

/** Endpoints with their own permission rules (they resolve the organization themselves). */
export const openFeatures: Feature[] = [accessFeature];
