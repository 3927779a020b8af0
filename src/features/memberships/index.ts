import type { Feature } from '../../http/feature';
import { itemParameters, operations } from '../../http/openapi';
import { registerMembershipRoutes } from './routes';
import { membershipCreateSchema, membershipListQuerySchema, membershipPatchSchema, membershipSchema } from './schema';

const tags = ['memberships'];

export const membershipsFeature: Feature = {
  register: registerMembershipRoutes,
  openapi: {
    '/memberships/': {
      get: operations.list(tags, 'listMemberships', membershipSchema, membershipListQuerySchema),
      post: {
        ...operations.create(tags, 'createMembership', membershipCreateSchema, membershipSchema),
        description: 'A user has at most one membership: a second one is a 400 on `user`.',
      },
    },
    '/memberships/{id}/': {
      parameters: itemParameters(),
      get: operations.retrieve(tags, 'retrieveMembership', membershipSchema),
      patch: {
        ...operations.patch(tags, 'updateMembership', membershipPatchSchema, membershipSchema),
        description: 'Moves the membership to another group; `user` is set on creation only and ignored here.',
      },
      delete: operations.delete(tags, 'deleteMembership'),
    },
  },
};
