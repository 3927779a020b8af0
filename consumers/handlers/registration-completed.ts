import { applyUserData, userEventDataSchema } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

/** A new learner; membership rules apply only if the LMS already counts them as active. */
export const registrationCompleted = defineHandler({
  type: 'org.openedx.learning.student.registration.completed.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: (ctx) => applyUserData(ctx.db, ctx.data, ctx.event.eventTime, { forceActive: false, rules: ctx.data.user.is_active }),
});
