import type { Db } from 'mongodb';
import { Tenant } from '../db/tenant';
import type { Infer } from '../validation';
import type { ApplyOutcome, EventStamp } from './event-time';
import { retireUser, type UserFacts, upsertUser } from './learners';

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
  required: ['user'],
} as const;

export type UserEventData = Infer<typeof userEventDataSchema>;

/**
 * How a user event counts for activations (docs/events.md): `activation` (the learner confirmed
 * their email: active, an activation), `registration` (registration or login: an activation if
 * active), `update` (never an activation).
 */
export type UserEventKind = 'activation' | 'registration' | 'update';

/**
 * What a user event does with its `data`, in organization `org`, as the event `at`; the
 * consumer's handlers and the backfill import (src/cli/import.ts) both come here, so an imported
 * line is exactly a delivered event (learners.ts `upsertUser`).
 */
export async function applyUserData(db: Db, data: UserEventData, at: string | EventStamp, kind: UserEventKind, org: string): Promise<ApplyOutcome> {
  return (await upsertUser(new Tenant(db, org), userFacts(data, kind), at, kind !== 'update')).outcome;
}

/** What a retirement event does, wherever the learner is (the event's organization does not matter: the record is keyed by user id). */
export function applyUserRetired(db: Db, userId: number, at: string | EventStamp): Promise<ApplyOutcome> {
  return retireUser(db, userId, at);
}

/** The user an event's `data` describes (the import's batch path reads lines with it too). */
export function userFacts(data: UserEventData, kind: UserEventKind): UserFacts {
  const { user } = data;
  return {
    id: user.id,
    username: user.pii.username,
    name: user.pii.name,
    email: user.pii.email,
    is_active: kind === 'activation' || user.is_active,
    ...(user.is_staff === undefined ? {} : { is_staff: user.is_staff }),
    ...(user.is_site_admin === undefined ? {} : { is_site_admin: user.is_site_admin }),
  };
}
