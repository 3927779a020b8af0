import { deleteCourse } from '../../src/domain/courses';
import { defineHandler } from './handler';

export const courseDeletedDataSchema = {
  type: 'object',
  properties: { course_key: { type: 'string', minLength: 1, maxLength: 255 } },
  required: ['course_key'],
} as const;

/**
 * The course, its group links and its public record are deleted, in whichever organization holds
 * it: a deletion needs no organization (the course's record is keyed by the course key alone).
 */
export const courseDeleted = defineHandler({
  type: 'org.openedx.content_authoring.course.deleted.v1',
  schema: courseDeletedDataSchema,
  subject: (data) => ({ course_key: data.course_key }),
  apply: ({ db, event, data }) => deleteCourse(db, data.course_key, event.stamp),
});
