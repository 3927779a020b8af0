import type { Db } from 'mongodb';
import { ownerLookup } from '../db/owners';
import { Tenant } from '../db/tenant';
import type { Infer } from '../validation';
import type { EventStamp } from './event-time';
import { reconcileMembership } from './membership-rules';
import { homeOf, keptFacts, replaceUserEvent, retireUser, type UserFacts, upsertUser } from './users';
import { keptStamp } from './versioned-records';

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
 * line is exactly a delivered event. Upserts the user (and its activation log), then brings the
 * membership in line with the log (membership-rules.ts `reconcileMembership`), also finishing
 * what a crash left half done.
 */
export async function applyUserData(db: Db, data: UserEventData, at: string | EventStamp, kind: UserEventKind, org: string) {
  const facts = userFacts(data, kind);
  const tenant = new Tenant(db, org);
  const activates = kind !== 'update' && facts.is_active;
  const result = await upsertUser(tenant, facts, at, activates);
  if (!result.current) return result.outcome;
  await reconcileMembership(homeOf(tenant, result.current), facts.id, result.current);
  return result.outcome;
}

/**
 * A user event without `time` whose earliest Kafka timestamp moved back from `from` to `to`
 * (src/db/event-times.ts): placed again there, then the membership reconciled with the log.
 */
export async function replaceUserData(db: Db, userId: number, eventId: string, from: string, to: string) {
  const placed = await replaceUserEvent(db, userId, eventId, from, to);
  if (!placed) return;
  // The membership first: its `born_v` follows the moved entry, so a retirement now newer takes it.
  await reconcileMembership(placed.home, userId, placed.record);
  if (placed.deletion) await applyUserRetired(db, userId, placed.deletion, placed.home.org);
  // The kept events, applied again in their order, now that the record is older (one named another organization).
  for (const p of placed.elsewhere) {
    if (p.deleted) {
      await applyUserRetired(db, userId, keptStamp(p), p.org);
      continue;
    }
    const result = await upsertUser(new Tenant(db, p.org), keptFacts(userId, p), keptStamp(p), p.act === true);
    if (result.current) await reconcileMembership(new Tenant(db, result.current.org), userId);
  }
}

/**
 * What a retirement event does, in organization `org` (where the user is looked for first), as
 * the event `at`. One older than the record (the learner came back after it) is a removal in
 * the learner's past: the membership is reconciled with it.
 */
export async function applyUserRetired(db: Db, userId: number, at: string | EventStamp, org: string) {
  const outcome = await retireUser(new Tenant(db, org), userId, at);
  if (outcome !== 'duplicate') {
    const owner = await ownerLookup(db).userOrg(userId);
    if (owner !== null) await reconcileMembership(new Tenant(db, owner), userId);
  }
  return outcome;
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
    is_staff: user.is_staff,
    is_site_admin: user.is_site_admin,
  };
}
