/** JSON Schemas of the `public-courses` resource (a course marked public; at most one record per course). */
import { courseKeySchema, courseRefSchema } from '../courses/schema';

export const publicCourseSchema = {
  type: 'object',
  properties: { id: { type: 'integer', minimum: 1 }, course: courseRefSchema },
  required: ['id', 'course'],
  additionalProperties: false,
} as const;

export const publicCourseCreateSchema = {
  type: 'object',
  properties: { course: courseKeySchema },
  required: ['course'],
  additionalProperties: false,
} as const;
