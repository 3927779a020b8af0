import type { Feature } from '../../http/feature';
import { itemParameters, operations } from '../../http/openapi';
import { registerGroupRoutes } from './routes';
import { groupCreateSchema, groupPatchSchema, groupSchema } from './schema';

const tags = ['course-access-groups'];

export const groupsFeature: Feature = {
  register: registerGroupRoutes,
  openapi: {
    '/course-access-groups/': {
      get: operations.list(tags, 'listGroups', groupSchema),
      post: operations.create(tags, 'createGroup', groupCreateSchema, groupSchema),
    },
    '/course-access-groups/{id}/': {
      parameters: itemParameters(),
      get: operations.retrieve(tags, 'retrieveGroup', groupSchema),
      patch: operations.patch(tags, 'updateGroup', groupPatchSchema, groupSchema),
      delete: operations.delete(tags, 'deleteGroup', "Also deletes the group's memberships, membership rules and course links."),
    },
  },
};
