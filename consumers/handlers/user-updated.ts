import { applyUserData, userEventDataSchema } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

/** Profile and flags change; membership rules are not applied (SPEC section 5). */
export const userUpdated = defineHandler({
  type: 'org.openedx.learning.user.updated.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: (ctx) => applyUserData(ctx.db, ctx.data, ctx.event.eventTime, { forceActive: false, rules: false }),
});
