import type Router from '@koa/router';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { groupCoursesRepository } from './repository';
import { groupCourseCreateSchema, groupCoursePatchSchema } from './schema';

const parseCreate = validator(groupCourseCreateSchema);
const parsePatch = validator(groupCoursePatchSchema);

export function registerGroupCourseRoutes(router: Router): void {
  resourceRoutes(router, '/group-courses', {
    repository: groupCoursesRepository,
    create: parseCreate,
    patch: parsePatch,
    remove: true,
  });
}
