// Records written by events in event-time order, and retirements that stay (src/domain/learners.ts,
// courses.ts; docs/event-core.md), over the in-memory Db.
import type { Db } from 'mongodb';
import type { Tenant } from '../../src/db/tenant';
import { learnerRecords } from '../../src/db/user-records';
import { upsertCourse } from '../../src/domain/courses';
import { normalizeEventTime } from '../../src/domain/event-time';
import { retireUser, upsertUser } from '../../src/domain/learners';
import { courseOf, day, facts, groupWithRule, membershipOf, memoryWorld, userOf } from '../helpers/domain';

let a: Tenant;
let b: Tenant;
let db: Db;
beforeEach(async () => {
  const world = await memoryWorld();
  db = world.db;
  a = world.tenant('org-a');
  b = world.tenant('org-b');
});

describe('upsert by event time', () => {
  test('a newer event wins: the record takes its fields and its time', async () => {
    expect((await upsertUser(a, facts(1, { name: 'Old' }), day(1))).outcome).toBe('applied');
    const { outcome, current } = await upsertUser(a, facts(1, { name: 'New', email: 'New@Example.com' }), day(2));
    expect(outcome).toBe('applied');
    expect(current).toMatchObject({ name: 'New', email: 'New@Example.com', email_lower: 'new@example.com', event_time: day(2) });
    expect(await userOf(a, 1)).toEqual(current);
  });

  test('an older event is ignored (stale) and answers the record as it stands', async () => {
    await upsertUser(a, facts(1, { name: 'New', is_active: true }), day(2));
    const { outcome, current } = await upsertUser(a, facts(1, { name: 'Old', is_active: false }), day(1));
    expect(outcome).toBe('stale');
    expect(current).toMatchObject({ name: 'New', is_active: true, event_time: day(2) });
    expect(await userOf(a, 1)).toMatchObject({ name: 'New', is_active: true, event_time: day(2) });
  });

  test('the same event again is a duplicate and changes nothing', async () => {
    await upsertUser(a, facts(1), day(1));
    const before = await userOf(a, 1);
    const again = await upsertUser(a, facts(1, { name: 'Changed in a redelivery?' }), day(1));
    expect(again.outcome).toBe('duplicate');
    expect(await userOf(a, 1)).toEqual(before);
  });

  test('times compare by instant, whatever their offset and fraction digits', async () => {
    await upsertUser(a, facts(1, { name: 'Noon UTC' }), normalizeEventTime('2026-07-01T12:00:00.5Z'));
    // 13:00+02:00 is 11:00 UTC: older, though its text sorts after.
    expect((await upsertUser(a, facts(1, { name: 'Eleven UTC' }), normalizeEventTime('2026-07-01T13:00:00+02:00'))).outcome).toBe('stale');
    expect((await upsertUser(a, facts(1, { name: 'Later' }), normalizeEventTime('2026-07-01T12:00:00.500001Z'))).outcome).toBe('applied');
    expect(await userOf(a, 1)).toMatchObject({ name: 'Later' });
  });

  test('flags an event does not carry keep their values; a new user gets false', async () => {
    await upsertUser(a, facts(1), day(1));
    expect(await userOf(a, 1)).toMatchObject({ is_staff: false, is_site_admin: false, listed: 1 });
    await upsertUser(a, facts(1, { is_staff: true, is_site_admin: true }), day(2));
    await upsertUser(a, facts(1, { name: 'Renamed' }), day(3));
    expect(await userOf(a, 1)).toMatchObject({ name: 'Renamed', is_staff: true, is_site_admin: true, listed: 0, event_time: day(3) });
    await upsertUser(a, facts(1, { is_site_admin: false }), day(4));
    expect(await userOf(a, 1)).toMatchObject({ is_staff: true, is_site_admin: false, listed: 1 });
  });

  test('courses follow the same order: newer wins, older is stale, the same is a duplicate', async () => {
    const key = 'course-v1:A+C1+2026';
    expect(await upsertCourse(a, { key, name: 'Second' }, day(2))).toBe('applied');
    expect(await upsertCourse(a, { key, name: 'First' }, day(1))).toBe('stale');
    expect(await upsertCourse(a, { key, name: 'Second' }, day(2))).toBe('duplicate');
    expect(await courseOf(a, key)).toMatchObject({ name: 'Second', event_time: day(2) });
    expect(await upsertCourse(a, { key, name: 'Third' }, day(3))).toBe('applied');
    expect(await courseOf(a, key)).toMatchObject({ name: 'Third', event_time: day(3) });
  });
});

describe('retirements', () => {
  test('a retired user cannot be brought back by an older event; a newer event brings them back', async () => {
    await upsertUser(a, facts(1), day(1));
    expect(await retireUser(db, 1, day(3))).toBe('applied');
    expect(await userOf(a, 1)).toBeNull();

    expect(await upsertUser(a, facts(1, { name: 'Late' }), day(2))).toMatchObject({ outcome: 'stale', current: { org: null, name: '' } });
    expect(await userOf(a, 1)).toBeNull();
    // The retirement itself again (a bare time is its own identity) is a duplicate.
    expect((await upsertUser(a, facts(1), day(3))).outcome).toBe('duplicate');
    expect(await userOf(a, 1)).toBeNull();

    expect((await upsertUser(a, facts(1, { name: 'Back' }), day(4))).outcome).toBe('applied');
    expect(await userOf(a, 1)).toMatchObject({ name: 'Back', event_time: day(4) });
  });

  test('retirement deletes the user and their membership; again it is a duplicate, an older one stale', async () => {
    await groupWithRule(a, 'example.com');
    await upsertUser(a, facts(1), day(1), true);
    expect(await membershipOf(a, 1)).not.toBeNull();
    expect(await retireUser(db, 1, day(2))).toBe('applied');
    expect(await membershipOf(a, 1)).toBeNull();
    expect(await userOf(a, 1)).toBeNull();
    expect(await retireUser(db, 1, day(2))).toBe('duplicate');
    expect(await retireUser(db, 1, { time: day(1), id: 'an-older-retirement' })).toBe('stale');
  });

  test('a user record newer than a retirement (an id used again) is left alone', async () => {
    await upsertUser(a, facts(1, { name: 'Reused id' }), day(5));
    expect(await retireUser(db, 1, day(4))).toBe('stale');
    expect(await userOf(a, 1)).toMatchObject({ name: 'Reused id' });
  });

  test('a retired record only moves forward, keeps no profile, and says which events it outlives', async () => {
    const retire = (time: string) => retireUser(db, 9, time);
    expect(await retire(day(2))).toBe('applied');
    expect(await retire(day(1))).toBe('stale');
    expect(await retire(day(2))).toBe('duplicate');
    expect(await learnerRecords(db).read(9)).toMatchObject({ org: null, event_time: day(2), username: '', email: '' });
    expect((await upsertUser(a, facts(9), { time: day(1), id: 'an-older-registration' })).outcome).toBe('stale');
    expect(await userOf(a, 9)).toBeNull();
    expect(await retire(day(3))).toBe('applied');
    expect(await learnerRecords(db).read(9)).toMatchObject({ org: null, event_time: day(3) });
  });
});

// Review 2026-12-01, F1: a membership is of one incarnation of its learner. A late retirement (or
// move away) between two activations ends the first incarnation in event time: its membership
// goes, and the second's is a new one (a new id), in either order of arrival.
test.each([
  ['a retirement arriving last', ['first', 'second', 'retired'] as const],
  ['a retirement arriving between', ['first', 'retired', 'second'] as const],
  ['a move away arriving last', ['first', 'second', 'moved'] as const],
  ['a move away arriving between', ['first', 'moved', 'second'] as const],
])('%s, between two activations: the membership after it is a new one', async (_, order) => {
  await groupWithRule(a, 'example.com');
  const steps = {
    first: () => upsertUser(a, facts(1), day(1), true),
    retired: () => retireUser(db, 1, day(5)),
    moved: () => upsertUser(b, facts(1), day(5)),
    second: () => upsertUser(a, facts(1), day(9), true),
  };
  let firstId: number | undefined;
  for (const step of order) {
    await steps[step]();
    if (step === 'first') firstId = (await membershipOf(a, 1))!.id;
  }
  const now = await membershipOf(a, 1);
  expect(now).toMatchObject({ group: expect.any(Number), automatic: true });
  expect(now!.id).not.toBe(firstId);
});
