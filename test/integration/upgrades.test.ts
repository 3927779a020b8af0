// src/db/upgrades.ts against the real local MongoDB-protocol server: users stored before
// activations were recorded keep the rules they were given (docs/events.md, Activations).
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { upgradeStoredRecords } from '../../src/db/upgrades';
import { applyUserData, type UserEventKind } from '../../src/domain/user-event-data';
import { day, groupWithRule, membershipOf, userOf } from '../helpers/domain';
import { MONGO_URL, uniqueName } from '../helpers/stack';

let client: MongoClient;
let db: Db;
let a: Tenant;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('upgrades'));
  await ensureIndexes(db);
  a = new Tenant(db, 'org-a');
  await groupWithRule(a, 'school.edu');
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

const send = (kind: UserEventKind, id: number, time: string, eventId: string, is_active = true) =>
  applyUserData(
    db,
    { user: { id, is_active, pii: { username: `user${id}`, email: `user${id}@school.edu`, name: `User ${id}` } } },
    { time, id: eventId },
    kind,
    a.org,
  );

/** A user as an earlier version of the service stored it: no event identities, no activation log (its earlier bookkeeping instead). */
async function legacyUser(id: number, is_active: boolean, d = 1) {
  await send('update', id, day(d), `legacy-${id}`, is_active);
  await db.collection(COLLECTIONS.users).updateOne({ _id: String(id) } as never, {
    $unset: { event_ids: '', event_n: '', act_log: '', log_n: '', settled_n: '' },
    $set: { act_v: '0000#0000', act_done: true },
  });
}

test('an active user stored before the activation log gets no rule at its next login; an inactive one gets them at its activation', async () => {
  await legacyUser(1, true);
  await legacyUser(2, false);
  await upgradeStoredRecords(db);
  expect(await userOf(a, 1)).toMatchObject({ act_log: [], floor_v: `${day(1)}#0001`, floor_open: true });
  expect(await userOf(a, 1)).not.toHaveProperty('act_v'); // the earlier bookkeeping goes
  expect(await userOf(a, 2)).toMatchObject({ floor_open: false });

  // The administrator had removed user 1's membership; the rules were applied at its activation back then.
  expect(await send('registration', 1, day(3), 'login-1')).toBe('applied');
  expect(await membershipOf(a, 1)).toBeNull();
  expect(await send('activation', 2, day(3), 'activation-2')).toBe('applied');
  expect(await membershipOf(a, 2)).not.toBeNull();

  // Deactivated and activated again: a new activation, so the rules apply again.
  await send('update', 1, day(4), 'deactivated-1', false);
  await send('activation', 1, day(5), 'activation-1');
  expect(await membershipOf(a, 1)).not.toBeNull();
});

test('an upgrade runs once: a start after it leaves a user stored later as it is', async () => {
  await upgradeStoredRecords(db);
  const upgrades = await db.collection(COLLECTIONS.upgrades).countDocuments();
  expect(upgrades).toBeGreaterThan(0);
  await legacyUser(3, true);
  await upgradeStoredRecords(db);
  expect((await userOf(a, 3))?.floor_v).toBeUndefined();
  expect(await db.collection(COLLECTIONS.upgrades).countDocuments()).toBe(upgrades);
  // Unmarked, its next login counts as the first activation of its log: what the upgrade prevents.
  await send('registration', 3, day(3), 'login-3');
  expect(await membershipOf(a, 3)).not.toBeNull();
});

test('no event older than an upgraded user applies the rules: its past is not known (they may have been applied, and an administrator may have changed the result since)', async () => {
  await legacyUser(4, false, 5);
  await db.collection(COLLECTIONS.upgrades).deleteOne({ _id: 'activation-log' } as never);
  await upgradeStoredRecords(db);
  expect(await send('activation', 4, day(2), 'late-4')).toBe('stale');
  expect(await membershipOf(a, 4)).toBeNull();
  // Not upgraded (a user stored now), the same late activation applies the rules of its period.
  await send('update', 5, day(5), 'inactive-5', false);
  expect(await send('activation', 5, day(2), 'late-5')).toBe('stale');
  expect(await membershipOf(a, 5)).not.toBeNull();
});

test('the activation-log upgrade of more users than one update command may carry (FerretDB answers none of 100 statements: src/db/dialect.ts)', async () => {
  const many = client.db(uniqueName('upgrades-many'));
  try {
    await ensureIndexes(many);
    const users = Array.from({ length: 150 }, (_, i) => ({
      _id: String(i + 1),
      id: i + 1,
      org: 'org-a',
      event_time: day(1),
      event_n: 1,
      is_active: i % 2 === 0,
    }));
    await many.collection(COLLECTIONS.users).insertMany(users as never);
    await upgradeStoredRecords(many);
    const upgraded = await many
      .collection(COLLECTIONS.users)
      .find({ act_log: [] }, { projection: { floor_v: 1, floor_open: 1, is_active: 1 } })
      .toArray();
    expect(upgraded).toHaveLength(150);
    expect(upgraded.every((u) => u.floor_v === `${day(1)}#0001` && u.floor_open === u.is_active)).toBe(true);
  } finally {
    await many.dropDatabase();
  }
});
