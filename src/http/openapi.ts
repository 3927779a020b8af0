import type { Feature, OpenApiPaths } from './feature';
import { listQuerySchema, plainQuerySchema, queryParameters } from './query';

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
  notFound: { description: "Unknown id (or another organization's).", ...json({ $ref: '#/components/schemas/Error' }) },
  badRequest: { description: 'Validation failed.', ...json({ $ref: '#/components/schemas/ValidationError' }) },
  unsupportedMediaType: { description: 'Content-Type is not application/json.', ...json({ $ref: '#/components/schemas/Error' }) },
  tooLarge: { description: 'Body over 1 MiB.', ...json({ $ref: '#/components/schemas/Error' }) },
};

export const jsonRequestBody = (schema: unknown) => ({ required: true, ...json(schema) });

const [limit, offset, organization] = queryParameters(listQuerySchema);

export const parameters = {
  limit,
  offset,
  organization,
  intId: { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
  courseId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'The course key as it is (`course-v1:ORG+NUM+RUN`) or percent-encoded.',
    schema: { type: 'string', minLength: 1 },
  },
};

/** Path-level parameters of an item path: its id and the organization. */
export const itemParameters = (id: unknown = parameters.intId) => [id, ...queryParameters(plainQuerySchema)];

/**
 * The operations of a resource, from its schemas. `item` is the read schema; `create`/`patch`
 * the request bodies; `query` the list's query-string schema.
 */
export const operations = {
  list: (tags: string[], operationId: string, item: unknown, query: Parameters<typeof queryParameters>[0] = listQuerySchema) => ({
    tags,
    operationId,
    parameters: queryParameters(query),
    responses: { '200': responses.ok(pageOf(item)), '400': responses.badRequest, ...commonResponses },
  }),
  create: (tags: string[], operationId: string, body: unknown, item: unknown) => ({
    tags,
    operationId,
    parameters: queryParameters(plainQuerySchema),
    requestBody: jsonRequestBody(body),
    responses: {
      '201': responses.created(item),
      '400': responses.badRequest,
      '413': responses.tooLarge,
      '415': responses.unsupportedMediaType,
      ...commonResponses,
    },
  }),
  retrieve: (tags: string[], operationId: string, item: unknown) => ({
    tags,
    operationId,
    responses: { '200': responses.ok(item), '404': responses.notFound, ...commonResponses },
  }),
  patch: (tags: string[], operationId: string, body: unknown, item: unknown) => ({
    tags,
    operationId,
    requestBody: jsonRequestBody(body),
    responses: {
      '200': responses.ok(item),
      '400': responses.badRequest,
      '404': responses.notFound,
      '413': responses.tooLarge,
      '415': responses.unsupportedMediaType,
      ...commonResponses,
    },
  }),
  delete: (tags: string[], operationId: string, description?: string) => ({
    tags,
    operationId,
    ...(description ? { description } : {}),
    responses: { '204': responses.noContent, '404': responses.notFound, ...commonResponses },
  }),
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
