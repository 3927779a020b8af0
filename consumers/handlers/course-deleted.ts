import { Tenant } from '../../src/db/tenant';
import { courseOrgForDeletion, deleteCourse } from '../../src/domain/courses';
import { defineHandler } from './handler';

export const courseDeletedDataSchema = {
  type: 'object',
  properties: { course_key: { type: 'string', minLength: 1, maxLength: 255 } },
  required: ['course_key'],
} as const;

/** The course, its group links and its public record are deleted. */
export const courseDeleted = defineHandler({
  type: 'org.openedx.content_authoring.course.deleted.v1',
  schema: courseDeletedDataSchema,
  subject: (data) => ({ course_key: data.course_key }),
  apply: async ({ db, event, data }) => {
    const org = await courseOrgForDeletion(db, data.course_key);
    // Never seen, and a key that names no organization: there is nothing to delete anywhere.
    if (org === null) return 'stale';
    return deleteCourse(new Tenant(db, org), data.course_key, event.eventTime);
  },
});
