import type { Db } from 'mongodb';
import { Tenant } from '../db/tenant';
import type { Infer } from '../validation';
import { applyMembershipRules } from './membership-rules';
import { type UserFacts, upsertUser } from './users';

/**
 * `data` of the three user events that carry a whole user (activated, registration completed,
 * updated). Emails are not checked as RFC 5322 addresses: the LMS already accepted them, and
 * rules only need what follows the last `@`.
 */
export const userEventDataSchema = {
  type: 'object',
  properties: {
    user: {
      type: 'object',
      properties: {
        id: { type: 'integer', minimum: 1 },
        is_active: { type: 'boolean' },
        pii: {
          type: 'object',
          properties: {
            username: { type: 'string', minLength: 1, maxLength: 255 },
            email: { type: 'string', pattern: '@', maxLength: 254 },
            name: { type: 'string', maxLength: 255 },
          },
          required: ['username', 'email', 'name'],
        },
        is_staff: { type: 'boolean' },
        is_site_admin: { type: 'boolean' },
      },
      required: ['id', 'is_active', 'pii'],
    },
    organization: { type: 'string', minLength: 1, maxLength: 255 },
  },
  required: ['user', 'organization'],
} as const;

export type UserEventData = Infer<typeof userEventDataSchema>;

/**
 * What a user event does with its `data` as of `time`; the consumer's handlers and the backfill
 * import (src/cli/import.ts) both come here, so an imported line is exactly a delivered event.
 * Upserts the user; then, when `rules` says so and the stored user is active, applies
 * membership rules. Rules run even when the upsert was a duplicate or stale: a redelivery after
 * a crash between the two steps must still create the membership (creating it is idempotent).
 */
export async function applyUserData(db: Db, data: UserEventData, time: string, opts: { forceActive: boolean; rules: boolean }) {
  const tenant = new Tenant(db, data.organization);
  const { outcome, current } = await upsertUser(tenant, userFacts(data, opts), time);
  if (opts.rules && current) {
    await applyMembershipRules(current.org === tenant.org ? tenant : new Tenant(db, current.org), current);
  }
  return outcome;
}

/** The user an event's `data` describes (the import's batch path reads lines with it too). */
export function userFacts(data: UserEventData, opts: { forceActive: boolean }): UserFacts {
  const { user } = data;
  return {
    id: user.id,
    username: user.pii.username,
    name: user.pii.name,
    email: user.pii.email,
    is_active: opts.forceActive || user.is_active,
    is_staff: user.is_staff,
    is_site_admin: user.is_site_admin,
  };
}
