import type { Feature } from '../../http/feature';
import { commonResponses, itemParameters, operations, responses } from '../../http/openapi';
import { registerRuleRoutes } from './routes';
import { ruleCreateSchema, ruleListQuerySchema, rulePatchSchema, ruleSchema } from './schema';

const tags = ['membership-rules'];

export const rulesFeature: Feature = {
  register: registerRuleRoutes,
  openapi: {
    '/membership-rules/': {
      get: operations.list(tags, 'listMembershipRules', ruleSchema, ruleListQuerySchema),
      post: {
        ...operations.create(tags, 'createMembershipRule', ruleCreateSchema, ruleSchema),
        description: 'A domain has at most one rule per organization (400 on `domain`).',
      },
    },
    '/membership-rules/{id}/': {
      parameters: itemParameters(),
      get: operations.retrieve(tags, 'retrieveMembershipRule', ruleSchema),
      patch: operations.patch(tags, 'updateMembershipRule', rulePatchSchema, ruleSchema),
      delete: operations.delete(tags, 'deleteMembershipRule'),
    },
    '/membership-rules/{id}/apply/': {
      parameters: itemParameters(),
      post: {
        tags,
        operationId: 'applyMembershipRule',
        summary: 'Apply the rule to existing users',
        description:
          "Every active user of the organization whose email domain is the rule's and who has no membership joins the rule's group (automatic). " +
          'No body is needed (an empty body or `{}`; other fields are ignored). Running it again creates nothing.',
        requestBody: { required: false, content: { 'application/json': { schema: { type: 'object' } } } },
        responses: {
          '200': responses.ok({
            type: 'object',
            properties: { created: { type: 'integer', minimum: 0 } },
            required: ['created'],
            additionalProperties: false,
          }),
          '400': { ...responses.badRequest, description: 'Malformed JSON or a body that is not an object.' },
          '404': responses.notFound,
          '413': responses.tooLarge,
          '415': responses.unsupportedMediaType,
          ...commonResponses,
        },
      },
    },
  },
};
