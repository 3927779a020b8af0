import type { Infer } from '../validation';

/**
 * The file `cag export` writes and `cag import-config` reads: one organization's configuration,
 * with the ids of the organization it came from (references use them; an import maps them to
 * ids claimed in the target). Users and courses are not in it: they come from the LMS.
 */
export const CONFIG_VERSION = 1;

const id = { type: 'integer', minimum: 1 } as const;
const text = { type: 'string', maxLength: 255 } as const;
const courseKey = { type: 'string', minLength: 1, maxLength: 255 } as const;

export const configDocumentSchema = {
  type: 'object',
  properties: {
    version: { type: 'integer', const: CONFIG_VERSION },
    organization: { type: 'string', minLength: 1 },
    site_configuration: {
      type: 'object',
      properties: { ENABLE_COURSE_ACCESS_GROUPS: { type: 'boolean' } },
      required: ['ENABLE_COURSE_ACCESS_GROUPS'],
      additionalProperties: false,
    },
    groups: {
      type: 'array',
      items: {
        type: 'object',
        properties: { id, name: { ...text, minLength: 1 }, description: text },
        required: ['id', 'name', 'description'],
        additionalProperties: false,
      },
    },
    membership_rules: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { ...text, minLength: 1 }, domain: { type: 'string', minLength: 1, maxLength: 253 }, group: id },
        required: ['name', 'domain', 'group'],
        additionalProperties: false,
      },
    },
    group_courses: {
      type: 'array',
      items: { type: 'object', properties: { course: courseKey, group: id }, required: ['course', 'group'], additionalProperties: false },
    },
    public_courses: {
      type: 'array',
      items: { type: 'object', properties: { course: courseKey }, required: ['course'], additionalProperties: false },
    },
    memberships: {
      type: 'array',
      items: {
        type: 'object',
        properties: { user: id, group: id, automatic: { type: 'boolean' } },
        required: ['user', 'group', 'automatic'],
        additionalProperties: false,
      },
    },
  },
  required: ['version', 'organization', 'site_configuration', 'groups', 'membership_rules', 'group_courses', 'public_courses', 'memberships'],
  additionalProperties: false,
} as const;

export type ConfigDocument = Infer<typeof configDocumentSchema>;
