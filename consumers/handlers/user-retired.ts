import { Tenant } from '../../src/db/tenant';
import { retireUser } from '../../src/domain/users';
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
  required: ['user', 'organization'],
} as const;

/** The user and their membership are deleted. */
export const userRetired = defineHandler({
  type: 'org.openedx.learning.user.retired.v1',
  schema: userRetiredDataSchema,
  subject: (data) => ({ user_id: String(data.user.id) }),
  apply: ({ db, event, data }) => retireUser(new Tenant(db, data.organization), data.user.id, event.eventTime),
});
