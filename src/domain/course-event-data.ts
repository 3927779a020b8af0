import type { Db } from 'mongodb';
import { Tenant } from '../db/tenant';
import type { Infer } from '../validation';
import { upsertCourse } from './courses';
import type { EventStamp } from './event-time';

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
 * What a catalog-info event does with its `data` in organization `org` (src/domain/organization.ts),
 * as the event `at` (the consumer's handler and the backfill import): the course is upserted.
 */
export function applyCatalogInfo(db: Db, data: CatalogInfoData, at: string | EventStamp, org: string) {
  const { course_key: key, name } = data.catalog_info;
  return upsertCourse(new Tenant(db, org), { key, name }, at);
}
