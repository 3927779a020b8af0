/** JSON Schemas of the `course-access-groups` resource: validation, types and OpenAPI. */

export const groupSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1 },
    name: { type: 'string', minLength: 1, maxLength: 32 },
    description: { type: 'string', maxLength: 255 },
  },
  required: ['id', 'name', 'description'],
  additionalProperties: false,
} as const;

export const groupCreateSchema = {
  type: 'object',
  properties: {
    name: groupSchema.properties.name,
    description: groupSchema.properties.description,
  },
  required: ['name', 'description'],
  additionalProperties: false,
} as const;

export const groupPatchSchema = {
  type: 'object',
  properties: groupCreateSchema.properties,
  additionalProperties: false,
} as const;

/** How other resources show a group: `{id, name}`. */
export const groupRefSchema = {
  type: 'object',
  properties: { id: groupSchema.properties.id, name: groupSchema.properties.name },
  required: ['id', 'name'],
  additionalProperties: false,
} as const;

/** A group id as other resources take it in a body. */
export const groupIdSchema = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
