/** JSON Schemas of the `membership-rules` resource: a learner whose email has `domain` joins `group`. */
import { integerParam, organizationProperties, pageProperties } from '../../http/query';
import { groupIdSchema, groupRefSchema } from '../groups/schema';

/**
 * A DNS name: labels of letters, digits and inner hyphens, separated by dots, ending in a TLD of
 * letters. Nothing is trimmed: ` example.com ` is refused, like `@example.com`, `111` and `===`.
 */
const domainSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 253,
  pattern: '^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}$',
  'x-message': 'Enter a valid domain name, such as example.com.',
  description: 'Compared and stored lowercase.',
} as const;

export const ruleSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1 },
    name: { type: 'string', minLength: 1, maxLength: 255 },
    domain: { type: 'string' },
    group: groupRefSchema,
  },
  required: ['id', 'name', 'domain', 'group'],
  additionalProperties: false,
} as const;

export const ruleCreateSchema = {
  type: 'object',
  properties: { name: ruleSchema.properties.name, domain: domainSchema, group: groupIdSchema },
  required: ['name', 'domain', 'group'],
  additionalProperties: false,
} as const;

export const rulePatchSchema = {
  type: 'object',
  properties: ruleCreateSchema.properties,
  additionalProperties: false,
} as const;

/** The list's query string: `group` lets a console count and show one group's rules. */
export const ruleListQuerySchema = {
  type: 'object',
  properties: {
    ...pageProperties,
    ...organizationProperties,
    group: { ...integerParam, description: 'Only the rules of this group.' },
  },
  additionalProperties: false,
} as const;
