import type Router from '@koa/router';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { publicCoursesRepository } from './repository';
import { publicCourseCreateSchema } from './schema';

const parseCreate = validator(publicCourseCreateSchema);

/** Create, list, retrieve and delete: a public record has nothing to PATCH (405). */
export function registerPublicCourseRoutes(router: Router): void {
  resourceRoutes(router, '/public-courses', {
    repository: publicCoursesRepository,
    create: parseCreate,
    remove: true,
  });
}
