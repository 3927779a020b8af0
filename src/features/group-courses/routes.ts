import type Router from '@koa/router';
import { createGroupCourse, deleteGroupCourse, updateGroupCourse } from '../../domain/group-courses';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { groupCourseQueries } from './queries';
import { groupCourseCreateSchema, groupCoursePatchSchema } from './schema';

const parseCreate = validator(groupCourseCreateSchema);
const parsePatch = validator(groupCoursePatchSchema);

export function registerGroupCourseRoutes(router: Router): void {
  resourceRoutes(router, '/group-courses', {
    queries: groupCourseQueries,
    create: { parse: parseCreate, write: createGroupCourse },
    patch: { parse: parsePatch, write: updateGroupCourse },
    remove: deleteGroupCourse,
  });
}
