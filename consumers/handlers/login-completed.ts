import { eventOrganization } from '../../src/domain/organization';
import { applyUserData, userEventDataSchema } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

/**
 * A learner signed in. A stock Open edX LMS publishes no activation event, so a login of an
 * active learner stands in for one (applied once per activation, like any other).
 */
export const loginCompleted = defineHandler({
  type: 'org.openedx.learning.auth.session.login.completed.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: ({ db, event, data, defaultOrganization }) =>
    applyUserData(db, data, event.stamp, 'registration', eventOrganization(data.organization, { defaultOrganization })),
});
