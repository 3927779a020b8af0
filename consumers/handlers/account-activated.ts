import { applyUserData, userEventDataSchema } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

/** The learner confirmed their email: the user is active now, and membership rules apply. */
export const accountActivated = defineHandler({
  type: 'org.openedx.learning.user.account.activated.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: (ctx) => applyUserData(ctx.db, ctx.data, ctx.event.eventTime, { forceActive: true, rules: true }),
});
