import type { Db } from 'mongodb';
import { Tenant } from '../db/tenant';
import type { Infer } from '../validation';
import type { ApplyOutcome, EventStamp } from './event-time';
import { joinByRule, retireUser, type UserFacts, upsertUser } from './learners';
import { matchRules } from './rule-match';

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
 * line is exactly a delivered event. The entry carries the group of the rule its email matches
 * now (the fold applies it if the entry is its period's activation). A rule created and applied
 * to existing learners while this event arrived may have read the learner before the record was
 * written, as this read may have missed the rule: after the write the rules are read again, and
 * an activation that matched none joins the group of one that now matches.
 */
export async function applyUserData(db: Db, data: UserEventData, at: string | EventStamp, kind: UserEventKind, org: string): Promise<ApplyOutcome> {
  const facts = userFacts(data, kind);
  const tenant = new Tenant(db, org);
  const capable = kind !== 'update';
  const rule = capable && facts.is_active ? await ruleGroup(tenant, facts) : null;
  const { outcome, record, activated } = await upsertUser(tenant, facts, at, capable, rule);
  if (activated && rule === null && record?.org === org && !record.m) {
    const late = await ruleGroup(tenant, facts);
    if (late !== null) await joinByRule(db, org, facts.id, late);
  }
  return outcome;
}

/** The group of the rule `facts`' email matches in the organization, or null. */
export async function ruleGroup(tenant: Tenant, facts: Pick<UserFacts, 'id' | 'email'>): Promise<number | null> {
  return (await matchRules(tenant, [facts]))[0]?.rule.group ?? null;
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
