import type { Feature } from '../../http/feature';
import { itemParameters, operations, parameters } from '../../http/openapi';
import { registerCourseRoutes } from './routes';
import { courseListQuerySchema, courseSchema } from './schema';

const tags = ['courses'];

export const coursesFeature: Feature = {
  register: registerCourseRoutes,
  openapi: {
    '/courses/': {
      get: {
        ...operations.list(tags, 'listCourses', courseSchema, courseListQuerySchema),
        description: "The organization's courses (filled from LMS events), by id.",
      },
    },
    '/courses/{id}/': {
      parameters: itemParameters(parameters.courseId),
      get: operations.retrieve(tags, 'retrieveCourse', courseSchema),
    },
  },
};
