import type { Db } from 'mongodb';
import { Tenant } from '../db/tenant';
import { Invalid } from '../errors';
import type { Infer } from '../validation';
import { orgFromCourseKey, upsertCourse } from './courses';

/** `data` of the catalog-info event (a courses line of `cag import` too). */
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

export type CatalogInfoData = Infer<typeof catalogInfoChangedDataSchema>;

/**
 * What a catalog-info event does with its `data` as of `time` (the consumer's handler and the
 * backfill import): the course is upserted in `organization`, else in the ORG of
 * `course-v1:ORG+NUM+RUN`.
 */
export function applyCatalogInfo(db: Db, data: CatalogInfoData, time: string) {
  const { course_key: key, name } = data.catalog_info;
  const org = data.organization ?? orgFromCourseKey(key);
  // Without either, no organization can be named: the event can never be applied.
  if (org === null) throw new Invalid({ non_field_errors: ['data has no organization and its course_key is not course-v1:ORG+NUM+RUN'] });
  return upsertCourse(new Tenant(db, org), { key, name }, time);
}
