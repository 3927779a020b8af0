import type { Feature } from '../../http/feature';
import { itemParameters, operations } from '../../http/openapi';
import { registerUserRoutes } from './routes';
import { userListQuerySchema, userSchema } from './schema';

const tags = ['users'];

export const usersFeature: Feature = {
  register: registerUserRoutes,
  openapi: {
    '/users/': {
      get: {
        ...operations.list(tags, 'listUsers', userSchema, userListQuerySchema),
        description: "The organization's users (filled from LMS events) but its site administrators, by id.",
      },
    },
    '/users/{id}/': {
      parameters: itemParameters(),
      get: { ...operations.retrieve(tags, 'retrieveUser', userSchema), description: 'A site administrator is not found here.' },
    },
  },
};
