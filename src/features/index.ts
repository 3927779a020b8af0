import type { Feature } from '../http/feature';
import { accessFeature } from './access';
import { groupsFeature } from './groups';

/** Admin resources (SPEC section 3): staff or site administrators, scoped to one organization. */
export const adminFeatures: Feature[] = [groupsFeature];

/** Endpoints with their own permission rules (they resolve the organization themselves). */
export const openFeatures: Feature[] = [accessFeature];
