import type { Feature, OpenApiPaths } from './feature';

export const API_PREFIX = '/course_access_groups/api/v1';

const errorSchema = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
} as const;

const validationErrorSchema = {
  type: 'object',
  description: 'DRF validation errors: each field (or non_field_errors) maps to its messages.',
  additionalProperties: { type: 'array', items: { type: 'string' } },
} as const;

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });

/** Responses every authenticated operation can give. */
export const commonResponses = {
  '401': { description: 'Missing, malformed, expired or badly signed token.', ...json({ $ref: '#/components/schemas/Error' }) },
  '403': { description: 'Valid token without the right.', ...json({ $ref: '#/components/schemas/Error' }) },
  '503': { description: 'Database unavailable.', ...json({ $ref: '#/components/schemas/Error' }) },
};

export const responses = {
  ok: (schema: unknown, description = 'OK') => ({ description, ...json(schema) }),
  created: (schema: unknown) => ({ description: 'Created', ...json(schema) }),
  noContent: { description: 'Deleted' },
  notFound: { description: 'Unknown id (or another organization\'s).', ...json({ $ref: '#/components/schemas/Error' }) },
  badRequest: { description: 'Validation failed.', ...json({ $ref: '#/components/schemas/ValidationError' }) },
  unsupportedMediaType: { description: 'Content-Type is not application/json.', ...json({ $ref: '#/components/schemas/Error' }) },
  tooLarge: { description: 'Body over 1 MiB.', ...json({ $ref: '#/components/schemas/Error' }) },
};

export const jsonRequestBody = (schema: unknown) => ({ required: true, ...json(schema) });

export const parameters = {
  limit: { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 0 }, description: 'Page size (default 20, at most 1000).' },
  offset: { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0 }, description: 'Items to skip.' },
  organization: {
    name: 'organization_uuid',
    in: 'query',
    schema: { type: 'string' },
    description: 'Platform staff only: act on this organization.',
  },
  intId: { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
};

/** The paginated envelope around a list of `item`. */
export const pageOf = (item: unknown) => ({
  type: 'object',
  properties: {
    count: { type: 'integer' },
    next: { type: ['string', 'null'] },
    previous: { type: ['string', 'null'] },
    results: { type: 'array', items: item },
  },
  required: ['count', 'next', 'previous', 'results'],
});

/** The OpenAPI 3.1 document, made from the features' own schemas. */
export function openApiDocument(features: Feature[]) {
  const paths: OpenApiPaths = {};
  for (const f of features) {
    for (const [path, item] of Object.entries(f.openapi)) paths[path] = { ...(paths[path] ?? {}), ...item };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Course Access Groups',
      version: '1.0.0',
      description: 'Which courses each learner of a multi-tenant LMS may see and enroll in.',
    },
    servers: [{ url: API_PREFIX }],
    security: [{ bearerAuth: [] }],
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: { Error: errorSchema, ValidationError: validationErrorSchema },
    },
    paths,
  };
}
