import type Router from '@koa/router';
import { createPublicCourse, deletePublicCourse } from '../../domain/public-courses';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { publicCourseQueries } from './queries';
import { publicCourseCreateSchema } from './schema';

const parseCreate = validator(publicCourseCreateSchema);

/** Create, list, retrieve and delete: a public record has nothing to PATCH (405). */
export function registerPublicCourseRoutes(router: Router): void {
  resourceRoutes(router, '/public-courses', {
    queries: publicCourseQueries,
    create: { parse: parseCreate, write: createPublicCourse },
    remove: deletePublicCourse,
  });
}
