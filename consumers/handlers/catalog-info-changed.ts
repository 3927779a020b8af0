import { applyCatalogInfo, catalogInfoChangedDataSchema } from '../../src/domain/course-event-data';
import { eventOrganization } from '../../src/domain/organization';
import { defineHandler } from './handler';

/** The course is upserted in `organization`, else the ORG of `course-v1:ORG+NUM+RUN`, else DEFAULT_ORGANIZATION. */
export const catalogInfoChanged = defineHandler({
  type: 'org.openedx.content_authoring.course.catalog_info.changed.v1',
  schema: catalogInfoChangedDataSchema,
  subject: (data) => ({ course_key: data.catalog_info.course_key }),
  apply: ({ db, event, data, defaultOrganization }) =>
    applyCatalogInfo(db, data, event.stamp, eventOrganization(data.organization, { courseKey: data.catalog_info.course_key, defaultOrganization })),
});
