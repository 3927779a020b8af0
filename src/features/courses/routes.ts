import type Router from '@koa/router';
import { queryParser } from '../../http/query';
import { resourceRoutes } from '../../http/resource-routes';
import { courseQueries } from './queries';
import { courseListQuerySchema } from './schema';

const parseListQuery = queryParser(courseListQuerySchema);

/** Read-only: list and retrieve. */
export function registerCourseRoutes(router: Router): void {
  resourceRoutes(router, '/courses', {
    queries: courseQueries,
    query: parseListQuery,
    // The course key as it is; the router hands it over percent-decoded, so
    // `course-v1%3AORG%2BNUM%2BRUN` works too.
    id: (raw) => raw ?? '',
  });
}
