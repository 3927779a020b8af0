import type { Db } from 'mongodb';
import { Tenant } from '../../src/db/tenant';
import type { Infer } from '../../src/validation';
import { orgFromCourseKey, upsertCourse } from '../../src/domain/courses';
import { InvalidMessage } from '../cloudevents';
import { defineHandler } from './handler';

export const catalogInfoChangedDataSchema = {
  type: 'object',
  properties: {
    catalog_info: {
      type: 'object',
      properties: {
        course_key: { type: 'string', minLength: 1, maxLength: 255 },
        name: { type: 'string', maxLength: 255 },
      },
      required: ['course_key', 'name'],
    },
    organization: { type: 'string', minLength: 1, maxLength: 255 },
  },
  required: ['catalog_info'],
} as const;

/** The course is upserted in `organization`, else in the ORG of `course-v1:ORG+NUM+RUN`. */
export const catalogInfoChanged = defineHandler({
  type: 'org.openedx.content_authoring.course.catalog_info.changed.v1',
  schema: catalogInfoChangedDataSchema,
  subject: (data) => ({ course_key: data.catalog_info.course_key }),
  apply: ({ db, event, data }) => applyCatalogInfo(db, data, event.eventTime),
});

/** What a catalog-info event does with its `data` as of `time` (the handler and the backfill import). */
export function applyCatalogInfo(db: Db, data: Infer<typeof catalogInfoChangedDataSchema>, time: string) {
  const { course_key: key, name } = data.catalog_info;
  const org = data.organization ?? orgFromCourseKey(key);
  // Without either, no organization can be named: the event can never be applied.
  if (org === null) throw new InvalidMessage('data has no organization and its course_key is not course-v1:ORG+NUM+RUN');
  return upsertCourse(new Tenant(db, org), { key, name }, time);
}
