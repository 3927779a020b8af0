// Event identity, same-time events, activations once, and retirements keyed by record alone
// (docs/event-core.md), over the in-memory Db: the real domain functions, no stack. The same rules
// run through Kafka in test/integration/events-exactly-once.test.ts and the event-history model test.
import type { Db } from 'mongodb';
import { Tenant } from '../../src/db/tenant';
import { deleteCourse, upsertCourse } from '../../src/domain/courses';
import type { EventStamp } from '../../src/domain/event-time';
import { retireUser } from '../../src/domain/learners';
import { deleteMembership } from '../../src/domain/memberships';
import { applyUserData, type UserEventData, type UserEventKind } from '../../src/domain/user-event-data';
import { courseOf, day, groupWithRule, membershipOf, memoryWorld, userOf } from '../helpers/domain';

let db: Db;
let a: Tenant;
beforeEach(async () => {
  let tenant: (org: string) => Tenant;
  ({ db, tenant } = await memoryWorld());
  a = tenant('org-a');
});

const at = (time: string, id: string): EventStamp => ({ time, id });

/** The identities of the entries the learner's history holds, in its order. */
const entryIds = async (id: number) => (await userOf(a, id))?.h?.entries.map((e) => e.id);

const userData = (id: number, over: { is_active?: boolean; name?: string; domain?: string } = {}): UserEventData => ({
  user: {
    id,
    is_active: over.is_active ?? true,
    pii: { username: `user${id}`, email: `user${id}@${over.domain ?? 'school.edu'}`, name: over.name ?? `User ${id}` },
  },
});

const send = (kind: UserEventKind, id: number, stamp: EventStamp, over: Parameters<typeof userData>[1] = {}, org = a.org) =>
  applyUserData(db, userData(id, over), stamp, kind, org);

describe('identity and order', () => {
  test('the same event twice is a duplicate; another event of the same time is applied after it', async () => {
    expect(await send('update', 1, at(day(2), 'e1'), { name: 'First' })).toBe('applied');
    expect(await send('update', 1, at(day(2), 'e1'), { name: 'First again?' })).toBe('duplicate');
    expect(await userOf(a, 1)).toMatchObject({ name: 'First' });
    expect(await entryIds(1)).toEqual(['e1']);
    expect(await send('update', 1, at(day(2), 'e2'), { name: 'Second' })).toBe('applied');
    expect(await userOf(a, 1)).toMatchObject({ name: 'Second' });
    expect(await entryIds(1)).toEqual(['e1', 'e2']);
    // Both stay known: a redelivery of either changes nothing.
    expect(await send('update', 1, at(day(2), 'e1'), { name: 'First' })).toBe('duplicate');
    expect(await userOf(a, 1)).toMatchObject({ name: 'Second' });
    // Older: stale (placed before, changing nothing after it); newer: applied.
    expect(await send('update', 1, at(day(1), 'e0'), { name: 'Older' })).toBe('stale');
    expect(await userOf(a, 1)).toMatchObject({ name: 'Second' });
    expect(await send('update', 1, at(day(3), 'e3'), { name: 'Newer' })).toBe('applied');
    expect(await userOf(a, 1)).toMatchObject({ name: 'Newer' });
    expect(await entryIds(1)).toEqual(['e0', 'e1', 'e2', 'e3']);
  });

  test('courses keep identities the same way', async () => {
    const key = 'course-v1:Org+C+R';
    expect(await upsertCourse(a, { key, name: 'One' }, at(day(1), 'c1'))).toBe('applied');
    expect(await upsertCourse(a, { key, name: 'Two' }, at(day(1), 'c2'))).toBe('applied');
    expect(await upsertCourse(a, { key, name: 'One' }, at(day(1), 'c1'))).toBe('duplicate');
    expect(await courseOf(a, key)).toMatchObject({ name: 'Two' });
  });
});

describe('activations: rules once per activation', () => {
  test('a redelivered activation does not bring back a membership an administrator removed', async () => {
    await groupWithRule(a, 'school.edu');
    await send('activation', 1, at(day(2), 'act'));
    const membership = await membershipOf(a, 1);
    expect(membership).not.toBeNull();
    const settled = await userOf(a, 1);
    expect(settled?.projected).toBe(settled?.rev);
    await deleteMembership(a, { id: membership!.id });
    expect(await send('activation', 1, at(day(2), 'act'))).toBe('duplicate');
    // Nor a login of the same run of activity, later or older.
    await send('registration', 1, at(day(3), 'login'));
    await send('registration', 1, at(day(1), 'old-login'));
    expect(await membershipOf(a, 1)).toBeNull();
  });

  test('an activation of the same time as the registration is applied, and applies the rules', async () => {
    const group = await groupWithRule(a, 'school.edu');
    expect(await send('registration', 1, at(day(1), 'reg'), { is_active: false })).toBe('applied');
    expect(await membershipOf(a, 1)).toBeNull();
    expect(await send('activation', 1, at(day(1), 'act'))).toBe('applied');
    expect(await userOf(a, 1)).toMatchObject({ is_active: true });
    expect(await membershipOf(a, 1)).toMatchObject({ group, automatic: true });
  });

  test('a learner deactivated and activated again gets the rules again; user.updated never applies them', async () => {
    const group = await groupWithRule(a, 'school.edu');
    await send('update', 1, at(day(1), 'u1'));
    expect(await membershipOf(a, 1)).toBeNull();
    await send('activation', 1, at(day(2), 'act1'));
    const first = await membershipOf(a, 1);
    await deleteMembership(a, { id: first!.id });
    await send('update', 1, at(day(3), 'deact'), { is_active: false });
    await send('registration', 1, at(day(4), 'login'));
    expect(await membershipOf(a, 1)).toMatchObject({ group });
  });

  test('a late activation older than a user.updated still applies the rules once (it is the activation)', async () => {
    const group = await groupWithRule(a, 'school.edu');
    await send('update', 1, at(day(5), 'profile'));
    expect(await send('activation', 1, at(day(2), 'act'))).toBe('stale');
    expect(await membershipOf(a, 1)).toMatchObject({ group });
  });

  test('a late deactivation older than the activation changes nothing', async () => {
    await groupWithRule(a, 'school.edu');
    await send('activation', 1, at(day(3), 'act'));
    const m = await membershipOf(a, 1);
    await deleteMembership(a, { id: m!.id });
    await send('registration', 1, at(day(1), 'reg'), { is_active: false });
    await send('registration', 1, at(day(4), 'login'));
    expect(await membershipOf(a, 1)).toBeNull();
  });

  test('an activation a crash left unprojected is finished by the next event of the user, even a duplicate', async () => {
    const group = await groupWithRule(a, 'school.edu');
    await send('activation', 1, at(day(1), 'act'));
    // As a process killed after the record was written, before its projection: no membership made.
    await a.collection('memberships').deleteOne({ _id: '1' });
    await a.collection('users').updateBookkeeping({ _id: '1' }, { $unset: { projected: '' } });
    expect(await send('activation', 1, at(day(1), 'act'))).toBe('duplicate');
    expect(await membershipOf(a, 1)).toMatchObject({ group });
    const settled = await userOf(a, 1);
    expect(settled?.projected).toBe(settled?.rev);
  });
});

describe('deletions keyed by record alone', () => {
  test('a course whose organization differs from its key is deleted any number of times', async () => {
    const key = 'course-v1:ORGX+C1+R';
    const tenantA = new Tenant(db, 'tenant-a');
    await upsertCourse(tenantA, { key, name: 'C1' }, at(day(1), 'c'));
    expect(await deleteCourse(db, key, at(day(2), 'd'))).toBe('applied');
    expect(await deleteCourse(db, key, at(day(2), 'd'))).toBe('duplicate');
    expect(await deleteCourse(db, key, at(day(1), 'older'))).toBe('stale');
    // Older events naming either organization do not bring it back.
    expect(await upsertCourse(tenantA, { key, name: 'Back?' }, at(day(1), 'c-late'))).toBe('stale');
    expect(await upsertCourse(new Tenant(db, 'ORGX'), { key, name: 'Back?' }, at(day(1), 'c-late2'))).toBe('stale');
    expect(await courseOf(tenantA, key)).toBeNull();
    expect(await courseOf(new Tenant(db, 'ORGX'), key)).toBeNull();
  });

  test('a user that moved organizations is retired cleanly, twice, and stays retired against either organization', async () => {
    const b = new Tenant(db, 'org-b');
    await send('registration', 1, at(day(1), 'reg-a'), {}, 'org-a');
    await send('update', 1, at(day(2), 'move'), {}, 'org-b');
    expect(await userOf(a, 1)).toBeNull();
    expect(await userOf(b, 1)).not.toBeNull();
    expect(await retireUser(db, 1, at(day(3), 'retire'))).toBe('applied');
    expect(await retireUser(db, 1, at(day(3), 'retire'))).toBe('duplicate');
    expect(await send('update', 1, at(day(2), 'late-a'), {}, 'org-a')).toBe('stale');
    expect(await send('update', 1, at(day(2), 'late-b'), {}, 'org-b')).toBe('stale');
    expect(await userOf(a, 1)).toBeNull();
    expect(await userOf(b, 1)).toBeNull();
  });

  test('a stale retirement counts as a deactivation: an activation older than it, arriving later, applies no rule', async () => {
    await groupWithRule(a, 'school.edu');
    await send('update', 1, at(day(9), 'profile'));
    expect(await retireUser(db, 1, at(day(5), 'late-retire'))).toBe('stale');
    expect(await send('activation', 1, at(day(4), 'late-act'))).toBe('stale');
    expect(await membershipOf(a, 1)).toBeNull();
  });

  test('a learner who signs in at the time of their retirement (another event) is created again and gets the rules', async () => {
    // The event-history model test found this one: the rules' own check for a racing retirement
    // took the tombstone of the same time for a newer one and took the membership back.
    const group = await groupWithRule(a, 'school.edu');
    expect(await retireUser(db, 1, at(day(5), 'retire'))).toBe('applied');
    expect(await send('registration', 1, at(day(5), 'login'))).toBe('applied');
    expect(await userOf(a, 1)).toMatchObject({ is_active: true });
    expect(await entryIds(1)).toEqual(['retire', 'login']);
    expect(await membershipOf(a, 1)).toMatchObject({ group, automatic: true });
  });

  test('a user created again at the time of the retirement continues its identities: the retirement stays a duplicate', async () => {
    await send('registration', 1, at(day(1), 'reg'));
    expect(await retireUser(db, 1, at(day(2), 'retire'))).toBe('applied');
    expect(await send('registration', 1, at(day(2), 'again'))).toBe('applied');
    expect(await entryIds(1)).toEqual(['retire', 'again']);
    expect(await retireUser(db, 1, at(day(2), 'retire'))).toBe('duplicate');
    expect(await userOf(a, 1)).not.toBeNull();
    expect(await send('registration', 1, at(day(2), 'again'))).toBe('duplicate');
  });
});
