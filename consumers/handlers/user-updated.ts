import { eventOrganization } from '../../src/domain/organization';
import { applyUserData, userEventDataSchema } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

/** Profile and flags change; never an activation (docs/events.md). */
export const userUpdated = defineHandler({
  type: 'org.openedx.learning.user.updated.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: ({ db, event, data, defaultOrganization }) =>
    applyUserData(db, data, event.stamp, 'update', eventOrganization(data.organization, { defaultOrganization })),
});
