import type Router from '@koa/router';
import { queryParser } from '../../http/query';
import { resourceRoutes } from '../../http/resource-routes';
import { userQueries } from './queries';
import { userListQuerySchema } from './schema';

const parseListQuery = queryParser(userListQuerySchema);

/** Read-only: list and retrieve. */
export function registerUserRoutes(router: Router): void {
  resourceRoutes(router, '/users', { queries: userQueries, query: parseListQuery });
}
