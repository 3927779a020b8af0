import { applyCatalogInfo, catalogInfoChangedDataSchema } from '../../src/domain/course-event-data';
import { defineHandler } from './handler';

/** The course is upserted in `organization`, else in the ORG of `course-v1:ORG+NUM+RUN`. */
export const catalogInfoChanged = defineHandler({
  type: 'org.openedx.content_authoring.course.catalog_info.changed.v1',
  schema: catalogInfoChangedDataSchema,
  subject: (data) => ({ course_key: data.catalog_info.course_key }),
  apply: ({ db, event, data }) => applyCatalogInfo(db, data, event.eventTime),
});
