import type { Feature } from '../../http/feature';
import { commonResponses, jsonRequestBody, pageOf, parameters, responses } from '../../http/openapi';
import { registerGroupRoutes } from './routes';
import { groupCreateSchema, groupPatchSchema, groupSchema } from './schema';

const tags = ['course-access-groups'];

export const groupsFeature: Feature = {
  register: registerGroupRoutes,
  openapi: {
    '/course-access-groups/': {
      get: {
        tags,
        operationId: 'listGroups',
        parameters: [parameters.limit, parameters.offset, parameters.organization],
        responses: { '200': responses.ok(pageOf(groupSchema)), '400': responses.badRequest, ...commonResponses },
      },
      post: {
        tags,
        operationId: 'createGroup',
        parameters: [parameters.organization],
        requestBody: jsonRequestBody(groupCreateSchema),
        responses: {
          '201': responses.created(groupSchema),
          '400': responses.badRequest,
          '413': responses.tooLarge,
          '415': responses.unsupportedMediaType,
          ...commonResponses,
        },
      },
    },
    '/course-access-groups/{id}/': {
      parameters: [parameters.intId, parameters.organization],
      get: {
        tags,
        operationId: 'retrieveGroup',
        responses: { '200': responses.ok(groupSchema), '404': responses.notFound, ...commonResponses },
      },
      patch: {
        tags,
        operationId: 'updateGroup',
        requestBody: jsonRequestBody(groupPatchSchema),
        responses: {
          '200': responses.ok(groupSchema),
          '400': responses.badRequest,
          '404': responses.notFound,
          '413': responses.tooLarge,
          '415': responses.unsupportedMediaType,
          ...commonResponses,
        },
      },
      delete: {
        tags,
        operationId: 'deleteGroup',
        description: 'Also deletes the group\'s memberships, membership rules and course links.',
        responses: { '204': responses.noContent, '404': responses.notFound, ...commonResponses },
      },
    },
  },
};
