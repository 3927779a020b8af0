import { eventOrganization } from '../../src/domain/organization';
import { applyUserData, userEventDataSchema } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

/** The learner confirmed their email: the user is active now, and this is an activation. */
export const accountActivated = defineHandler({
  type: 'org.openedx.learning.user.account.activated.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: ({ db, event, data, defaultOrganization }) =>
    applyUserData(db, data, event.stamp, 'activation', eventOrganization(data.organization, { defaultOrganization })),
});
