/** JSON Schemas of the `memberships` resource: validation, types and OpenAPI. */
import { integerParam, organizationProperties, pageProperties } from '../../http/query';
import { groupIdSchema, groupRefSchema } from '../groups/schema';
import { userIdSchema, userRefSchema } from '../users/schema';

export const membershipSchema = {
  type: 'object',
  properties: { id: { type: 'integer', minimum: 1 }, user: userRefSchema, group: groupRefSchema },
  required: ['id', 'user', 'group'],
  additionalProperties: false,
} as const;

export const membershipCreateSchema = {
  type: 'object',
  properties: { user: userIdSchema, group: groupIdSchema },
  required: ['user', 'group'],
  additionalProperties: false,
} as const;

/** `user` is set on creation only: a PATCH moves the membership to another group (a `user` in it is ignored). */
export const membershipPatchSchema = {
  type: 'object',
  properties: { group: groupIdSchema },
  additionalProperties: false,
} as const;

/**
 * The list's query string: `group` gives a group's members, site administrators included
 * (`users/?group=` leaves them out), so a console can list and count what a group deletion removes.
 */
export const membershipListQuerySchema = {
  type: 'object',
  properties: {
    ...pageProperties,
    ...organizationProperties,
    group: { ...integerParam, description: 'Only the memberships of this group.' },
  },
  additionalProperties: false,
} as const;
