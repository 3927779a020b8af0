/** JSON Schemas of the `group-courses` resource (links between a course and a group). */
import { courseKeySchema, courseRefSchema } from '../courses/schema';
import { groupIdSchema, groupRefSchema } from '../groups/schema';

export const groupCourseSchema = {
  type: 'object',
  properties: { id: { type: 'integer', minimum: 1 }, course: courseRefSchema, group: groupRefSchema },
  required: ['id', 'course', 'group'],
  additionalProperties: false,
} as const;

export const groupCourseCreateSchema = {
  type: 'object',
  properties: { course: courseKeySchema, group: groupIdSchema },
  required: ['course', 'group'],
  additionalProperties: false,
} as const;

export const groupCoursePatchSchema = {
  type: 'object',
  properties: groupCourseCreateSchema.properties,
  additionalProperties: false,
} as const;
