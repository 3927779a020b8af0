import type { Feature } from '../../http/feature';
import { itemParameters, operations } from '../../http/openapi';
import { registerRuleRoutes } from './routes';
import { ruleCreateSchema, rulePatchSchema, ruleSchema } from './schema';

const tags = ['membership-rules'];

export const rulesFeature: Feature = {
  register: registerRuleRoutes,
  openapi: {
    '/membership-rules/': {
      get: operations.list(tags, 'listMembershipRules', ruleSchema),
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
  },
};
