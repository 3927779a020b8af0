import type { Feature } from '../../http/feature';
import { itemParameters, operations } from '../../http/openapi';
import { registerGroupCourseRoutes } from './routes';
import { groupCourseCreateSchema, groupCoursePatchSchema, groupCourseSchema } from './schema';

const tags = ['group-courses'];

export const groupCoursesFeature: Feature = {
  register: registerGroupCourseRoutes,
  openapi: {
    '/group-courses/': {
      get: operations.list(tags, 'listGroupCourses', groupCourseSchema),
      post: {
        ...operations.create(tags, 'createGroupCourse', groupCourseCreateSchema, groupCourseSchema),
        description: 'Links a course to a group; a (course, group) pair is linked at most once.',
      },
    },
    '/group-courses/{id}/': {
      parameters: itemParameters(),
      get: operations.retrieve(tags, 'retrieveGroupCourse', groupCourseSchema),
      patch: operations.patch(tags, 'updateGroupCourse', groupCoursePatchSchema, groupCourseSchema),
      delete: operations.delete(tags, 'deleteGroupCourse'),
    },
  },
};
