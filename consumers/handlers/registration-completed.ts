import { defineHandler } from './handler';
import { upsertUserEvent, userEventDataSchema } from './user-event-data';

/** A new learner; membership rules apply only if the LMS already counts them as active. */
export const registrationCompleted = defineHandler({
  type: 'org.openedx.learning.student.registration.completed.v1',
  schema: userEventDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: (ctx) => upsertUserEvent(ctx, { forceActive: false, rules: ctx.data.user.is_active }),
});
