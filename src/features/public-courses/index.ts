import type { Feature } from '../../http/feature';
import { itemParameters, operations } from '../../http/openapi';
import { registerPublicCourseRoutes } from './routes';
import { publicCourseCreateSchema, publicCourseSchema } from './schema';

const tags = ['public-courses'];

export const publicCoursesFeature: Feature = {
  register: registerPublicCourseRoutes,
  openapi: {
    '/public-courses/': {
      get: operations.list(tags, 'listPublicCourses', publicCourseSchema),
      post: {
        ...operations.create(tags, 'createPublicCourse', publicCourseCreateSchema, publicCourseSchema),
        description: 'Marks a course public; a course has at most one public record (400 on `course`).',
      },
    },
    '/public-courses/{id}/': {
      parameters: itemParameters(),
      get: operations.retrieve(tags, 'retrievePublicCourse', publicCourseSchema),
      delete: operations.delete(tags, 'deletePublicCourse'),
    },
  },
};
