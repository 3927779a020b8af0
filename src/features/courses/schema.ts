/** JSON Schemas of the read-only `courses` resource: validation, types and OpenAPI. */
import { booleanParam, integerParam, organizationProperties, pageProperties, searchParam } from '../../http/query';
import { groupRefSchema } from '../groups/schema';

/** A course key as other resources take it in a body (`course-v1:ORG+NUM+RUN`). */
export const courseKeySchema = { type: 'string', minLength: 1, maxLength: 255 } as const;

/** How other resources show a course: `{id, name}`. */
export const courseRefSchema = {
  type: 'object',
  properties: { id: { type: 'string' }, name: { type: 'string' } },
  required: ['id', 'name'],
  additionalProperties: false,
} as const;

export const courseSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'The course key.' },
    name: { type: 'string' },
    public_status: {
      type: 'object',
      properties: {
        is_public: { type: 'boolean' },
        id: { type: 'integer', minimum: 1, description: "The public-course record's id; only when public." },
      },
      required: ['is_public'],
      additionalProperties: false,
    },
    group_links: {
      type: 'array',
      description: 'The group-course links of the course, by id.',
      items: {
        type: 'object',
        properties: { id: { type: 'integer', minimum: 1 }, group: groupRefSchema },
        required: ['id', 'group'],
        additionalProperties: false,
      },
    },
  },
  required: ['id', 'name', 'public_status', 'group_links'],
  additionalProperties: false,
} as const;

export const courseListQuerySchema = {
  type: 'object',
  properties: {
    ...pageProperties,
    ...organizationProperties,
    search: { ...searchParam, description: `Searches the course id and name. ${searchParam.description}` },
    is_public: { ...booleanParam, description: 'Only public (true) or only private (false) courses.' },
    group: { ...integerParam, description: 'Only courses linked to this group.' },
    no_group: { ...booleanParam, description: 'true: only courses without a group link; false: only courses with one.' },
  },
  additionalProperties: false,
} as const;
