/** JSON Schemas of the read-only `users` resource: validation, types and OpenAPI. */
import { booleanParam, integerParam, organizationProperties, pageProperties, searchParam } from '../../http/query';
import { groupRefSchema } from '../groups/schema';

/** A user id as other resources take it in a body. */
export const userIdSchema = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;

/** How other resources show a user: `{id, username, email}`. */
export const userRefSchema = {
  type: 'object',
  properties: { id: { type: 'integer', minimum: 1 }, username: { type: 'string' }, email: { type: 'string' } },
  required: ['id', 'username', 'email'],
  additionalProperties: false,
} as const;

export const userSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1 },
    username: { type: 'string' },
    name: { type: 'string' },
    email: { type: 'string' },
    membership: {
      type: ['object', 'null'],
      description: "The user's membership, or null.",
      properties: { id: { type: 'integer', minimum: 1 }, group: groupRefSchema },
      required: ['id', 'group'],
      additionalProperties: false,
    },
  },
  required: ['id', 'username', 'name', 'email', 'membership'],
  additionalProperties: false,
} as const;

export const userListQuerySchema = {
  type: 'object',
  properties: {
    ...pageProperties,
    ...organizationProperties,
    search: { ...searchParam, description: `Searches username, name and email. ${searchParam.description}` },
    email_exact: { type: 'string', description: 'Only the user with this whole email, compared case-insensitively.' },
    group: { ...integerParam, description: 'Only members of this group.' },
    no_group: { ...booleanParam, description: 'true: only users without a membership; false: only members.' },
  },
  additionalProperties: false,
} as const;
