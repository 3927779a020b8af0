import { decisionSchema } from '../../domain/access-decisions';
import type { Feature } from '../../http/feature';
import { commonResponses, jsonRequestBody, parameters, responses } from '../../http/openapi';
import { registerAccessRoutes } from './routes';
import { accessQuerySchema, batchRequestSchema, batchResponseSchema } from './schema';

const tags = ['access'];

const queryParameters = Object.entries(accessQuerySchema.properties).map(([name, schema]) => ({
  name,
  in: 'query',
  required: (accessQuerySchema.required as readonly string[]).includes(name),
  schema,
}));

/** Accepted from platform staff like everywhere (anyone else gets 403); the decision still uses the course's organization. */
const organizationParameter = {
  ...parameters.organization,
  description: "Platform staff only (anyone else gets 403). Decisions always use the course's organization.",
};

const callers =
  'Callers: tokens with role `service` or platform staff (`administrator`) for any organization; ' +
  "site administrators for their own organization's courses (another organization's behave as unknown).";

export const accessFeature: Feature = {
  register: registerAccessRoutes,
  openapi: {
    '/access/': {
      get: {
        tags,
        operationId: 'checkAccess',
        summary: 'May this learner take this action on this course?',
        description: `The organization is the course's. ${callers}`,
        parameters: [...queryParameters, organizationParameter],
        responses: {
          '200': responses.ok(decisionSchema),
          '400': responses.badRequest,
          '404': { ...responses.notFound, description: 'Unknown course.' },
          ...commonResponses,
        },
      },
    },
    '/access/batch/': {
      post: {
        tags,
        operationId: 'checkAccessBatch',
        summary: 'The same decision for up to 1000 courses (a catalog page).',
        description: `Results are in request order; an unknown course is \`allowed: false, reason: "unknown_course"\`. ${callers}`,
        parameters: [organizationParameter],
        requestBody: jsonRequestBody(batchRequestSchema),
        responses: {
          '200': responses.ok(batchResponseSchema),
          '400': responses.badRequest,
          '413': responses.tooLarge,
          '415': responses.unsupportedMediaType,
          ...commonResponses,
        },
      },
    },
  },
};
