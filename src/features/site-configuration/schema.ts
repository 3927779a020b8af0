/** JSON Schemas of the organization's `site-configuration` (one per organization). */

export const siteConfigurationSchema = {
  type: 'object',
  properties: {
    ENABLE_COURSE_ACCESS_GROUPS: {
      type: 'boolean',
      description: 'When on, courses are private unless public or linked to a group of the learner. Default false.',
    },
  },
  required: ['ENABLE_COURSE_ACCESS_GROUPS'],
  additionalProperties: false,
} as const;

export const siteConfigurationPatchSchema = {
  type: 'object',
  properties: siteConfigurationSchema.properties,
  additionalProperties: false,
} as const;
