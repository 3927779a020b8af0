import type Router from '@koa/router';
import { queryParser } from '../../http/query';
import { resourceRoutes } from '../../http/resource-routes';
import { usersRepository } from './repository';
import { userListQuerySchema } from './schema';

const parseListQuery = queryParser(userListQuerySchema);

/** Read-only: list and retrieve. */
export function registerUserRoutes(router: Router): void {
  resourceRoutes(router, '/users', { repository: usersRepository, query: parseListQuery });
}
