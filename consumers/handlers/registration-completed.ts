import { eventOrganization } from '../../src/domain/organization';
import { applyUserData, userEventDataSchema } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

/** A new learner; an activation if the LMS already counts them as active. */
export const registrationCompleted = defineHandler({
  type: 'org.openedx.learning.student.registration.completed.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: ({ db, event, data, defaultOrganization }) =>
    applyUserData(db, data, event.stamp, 'registration', eventOrganization(data.organization, { defaultOrganization })),
});
