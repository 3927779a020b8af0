import { applyUserRetired } from '../../src/domain/user-event-data';
import { defineHandler } from './handler';

export const userRetiredDataSchema = {
  type: 'object',
  properties: {
    user: {
      type: 'object',
      properties: { id: { type: 'integer', minimum: 1 } },
      required: ['id'],
    },
    organization: { type: 'string', minLength: 1, maxLength: 255 },
  },
  required: ['user'],
} as const;

/** The user and their membership are deleted, wherever the user is: a retirement needs no organization (the record is keyed by user id). */
export const userRetired = defineHandler({
  type: 'org.openedx.learning.user.retired.v1',
  schema: userRetiredDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: ({ db, event, data }) => applyUserRetired(db, data.user.id, event.stamp),
});
