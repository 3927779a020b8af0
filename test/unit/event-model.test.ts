// The reference model of the event-history property test (test/helpers/event-model.ts), on
// hand-written histories: each test is one rule of docs/events.md "How each event is applied"
// (or SPEC §3/§4), so the model is checked against the documentation before the service is
// checked against the model.
import { type CatalogEvent, type CourseDeletedEvent, EventModel, type RetiredEvent, type UserEvent, type UserEventKind } from '../helpers/event-model';

const LMS = 'openedx/lms/web';
let seq = 0;
const user = (
  kind: UserEventKind,
  time: number,
  o: { id?: number; active?: boolean; email?: string; name?: string; org?: string; eid?: string } = {},
): UserEvent => ({
  kind,
  source: LMS,
  id: o.eid ?? `e${++seq}`,
  time,
  ...(o.org === undefined ? { organization: 'tenant-a' } : o.org === '' ? {} : { organization: o.org }),
  user: { id: o.id ?? 7, is_active: o.active ?? false, username: 'ann', email: o.email ?? 'ann@uni.edu', name: o.name ?? 'Ann' },
});
const retired = (time: number, o: { id?: number; org?: string } = {}): RetiredEvent => ({
  kind: 'retired',
  source: LMS,
  id: `e${++seq}`,
  time,
  organization: o.org ?? 'tenant-a',
  userId: o.id ?? 7,
});
const catalog = (key: string, time: number, o: { org?: string; name?: string } = {}): CatalogEvent => ({
  kind: 'catalog',
  source: LMS,
  id: `e${++seq}`,
  time,
  ...(o.org === undefined ? {} : { organization: o.org }),
  key,
  name: o.name ?? 'Course',
});
const courseDeleted = (key: string, time: number): CourseDeletedEvent => ({ kind: 'courseDeleted', source: LMS, id: `e${++seq}`, time, key });

/** A model with a group `g` in tenant-a and a rule uni.edu -> g. */
function withRule(org = 'tenant-a') {
  const m = new EventModel();
  const g = m.createGroup(org, 'g');
  expect(m.createRule(org, 'UNI.edu', g)).toBe(201);
  return { m, g };
}

describe('identity', () => {
  test('the same event (source and id) twice changes nothing the second time', () => {
    const m = new EventModel();
    const e = user('updated', 5, { name: 'First' });
    expect(m.deliver(e)).toBe('applied');
    expect(m.deliver(user('updated', 5, { name: 'Second' }))).toBe('applied');
    expect(m.deliver(e)).toBe('duplicate');
    expect(m.user('tenant-a', 7)?.name).toBe('Second');
  });

  test('the same id from another source is another event', () => {
    const m = new EventModel();
    const e = user('updated', 5, { name: 'First', eid: 'x' });
    m.deliver(e);
    expect(m.deliver({ ...e, source: 'openedx/cms/web', user: { ...e.user, name: 'Other' } })).toBe('applied');
    expect(m.user('tenant-a', 7)?.name).toBe('Other');
  });
});

describe('order', () => {
  test('events of the same time are applied in arrival order; an older one is stale', () => {
    const m = new EventModel();
    expect(m.deliver(user('updated', 5, { name: 'A' }))).toBe('applied');
    expect(m.deliver(user('updated', 5, { name: 'B' }))).toBe('applied');
    expect(m.deliver(user('updated', 4, { name: 'Old' }))).toBe('stale');
    expect(m.user('tenant-a', 7)?.name).toBe('B');
    expect(m.trace({ user: 7 }).map((line) => line.split(' ').slice(1).join(' '))).toEqual(['applied 5#1', 'applied 5#2', 'stale 4#0']);
  });

  test('finding 3: registration (inactive, T) then activation (T, another id): active and a member by the rule', () => {
    const { m, g } = withRule();
    m.deliver(user('registered', 10, { active: false }));
    expect(m.deliver(user('activated', 10, { active: true }))).toBe('applied');
    expect(m.user('tenant-a', 7)?.is_active).toBe(true);
    expect(m.membership('tenant-a', 7)).toBe(g);
  });
});

describe('deletions', () => {
  test('finding 1: a course deleted, then the same deletion again: deleted once, stays deleted', () => {
    const m = new EventModel();
    const key = 'course-v1:ORGX+C1+R';
    m.deliver(catalog(key, 1, { org: 'tenant-a' }));
    const del = courseDeleted(key, 2);
    expect(m.deliver(del)).toBe('applied');
    expect(m.deliver(del)).toBe('duplicate');
    expect(m.course('tenant-a', key)).toBeNull();
    expect(m.decide(null, key)).toEqual({ allowed: false, reason: 'unknown_course' });
  });

  test('an older event, naming any organization, does not bring a deleted record back', () => {
    const m = new EventModel();
    const key = 'course-v1:ORGX+C1+R';
    m.deliver(catalog(key, 1, { org: 'tenant-a' }));
    m.deliver(courseDeleted(key, 3));
    expect(m.deliver(catalog(key, 2, { org: 'tenant-b' }))).toBe('stale');
    expect(m.deliver(catalog(key, 2))).toBe('stale'); // the key's ORG
    m.deliver(user('activated', 1));
    m.deliver(retired(3, { org: 'tenant-b' }));
    expect(m.deliver(user('activated', 2, { org: 'tenant-c' }))).toBe('stale');
    expect(m.orgs().flatMap((o) => [...m.view(o).users, ...m.view(o).courses])).toEqual([]);
  });

  test('a record created again continues the tombstone version: the deletion redelivered stays a duplicate', () => {
    const m = new EventModel();
    m.deliver(user('registered', 1));
    const retire = retired(5);
    m.deliver(retire);
    expect(m.deliver(user('registered', 5))).toBe('applied'); // the same time, after it: 5#2
    expect(m.deliver(retire)).toBe('duplicate');
    expect(m.user('tenant-a', 7)).not.toBeNull();
  });

  test('a retirement deletes the user and their membership wherever the user is', () => {
    const { m } = withRule('tenant-b');
    m.deliver(user('activated', 1, { org: 'tenant-b' }));
    expect(m.membership('tenant-b', 7)).not.toBeNull();
    m.deliver(retired(2, { org: 'tenant-a' }));
    expect(m.user('tenant-b', 7)).toBeNull();
    expect(m.membership('tenant-b', 7)).toBeNull();
  });

  test('a course deleted loses its links and public record; a group deleted loses its memberships, rules and links', () => {
    const { m, g } = withRule();
    const key = 'course-v1:tenant-a+C1+R';
    m.deliver(catalog(key, 1));
    expect(m.link('tenant-a', key, g)).toBe(201);
    expect(m.makePublic('tenant-a', key)).toBe(201);
    m.deliver(courseDeleted(key, 2));
    m.deliver(catalog(key, 3));
    expect(m.view('tenant-a').courses).toEqual([{ id: key, name: 'Course', is_public: false, groups: [] }]);
    m.deliver(user('activated', 1));
    expect(m.link('tenant-a', key, g)).toBe(201);
    expect(m.deleteGroup('tenant-a', g)).toBe(204);
    const v = m.view('tenant-a');
    expect([v.memberships, v.rules, v.links, v.groups]).toEqual([[], [], [], []]);
  });
});

// Issue 38, item 2: a deletion of the same time as events the record applied, arriving after a
// newer event, comes after those of its time (the tie rule), as it would in its place.
describe('deletions tied with creations, arriving late', () => {
  test.each([
    ['in its place', false],
    ['after the newer login', true],
  ])("a retirement of the activation's time arriving %s takes the membership the administrator moved; the newer login's rule applies", (_name, late) => {
    const { m, g } = withRule();
    const other = m.createGroup('tenant-a', 'other');
    m.deliver(user('activated', 5, { active: true }));
    expect(m.moveMembership('tenant-a', 7, other)).toBe(200);
    const retirement = retired(5);
    const login = user('login', 6, { active: true });
    for (const e of late ? [login, retirement] : [retirement, login]) m.deliver(e);
    expect(m.membership('tenant-a', 7)).toBe(g);
    // Delivered again, it is the same event.
    expect(m.deliver(retirement)).toBe('duplicate');
    expect(m.membership('tenant-a', 7)).toBe(g);
  });

  test.each([
    ['in its place', false],
    ['after a newer catalog change', true],
  ])("a course deleted at its creation's time arriving %s takes the links made at that time", (_name, late) => {
    const m = new EventModel();
    const key = 'course-v1:ORGX+C9+R';
    const g = m.createGroup('tenant-a', 'g');
    m.deliver(catalog(key, 5, { org: 'tenant-a' }));
    expect(m.link('tenant-a', key, g)).toBe(201);
    const deletion = courseDeleted(key, 5);
    const renamed = catalog(key, 6, { org: 'tenant-a', name: 'Renamed' });
    for (const e of late ? [renamed, deletion] : [deletion, renamed]) m.deliver(e);
    expect(m.view('tenant-a').courses).toEqual([{ id: key, name: 'Renamed', is_public: false, groups: [] }]);
  });
});

describe('moves', () => {
  test('a newer user event naming another organization moves the user; the membership stays behind and goes', () => {
    const { m } = withRule();
    m.deliver(user('activated', 1));
    expect(m.membership('tenant-a', 7)).not.toBeNull();
    m.deliver(user('updated', 2, { org: 'tenant-b', active: true }));
    expect(m.user('tenant-a', 7)).toBeNull();
    expect(m.user('tenant-b', 7)?.is_active).toBe(true);
    expect(m.membership('tenant-a', 7)).toBeNull();
    // An older event naming the old organization does not move it back.
    expect(m.deliver(user('activated', 1, { org: 'tenant-a' }))).toBe('stale');
    expect(m.user('tenant-b', 7)).not.toBeNull();
  });

  test('a course moved to another organization loses its links and public record in the old one', () => {
    const { m, g } = withRule();
    const key = 'course-v1:ORGX+C1+R';
    m.deliver(catalog(key, 1, { org: 'tenant-a' }));
    m.link('tenant-a', key, g);
    m.makePublic('tenant-a', key);
    m.deliver(catalog(key, 1)); // the same time, another event: ORGX
    expect(m.view('tenant-a')).toMatchObject({ courses: [], links: [], publics: [] });
    expect(m.view('ORGX').courses).toEqual([{ id: key, name: 'Course', is_public: false, groups: [] }]);
  });

  test('an activation that moves a learner applies the rules of the new organization', () => {
    const { m } = withRule('tenant-b');
    m.deliver(user('activated', 1));
    const g = m.groups('tenant-b')[0]!.handle;
    m.deliver(user('login', 2, { org: 'tenant-b', active: true }));
    expect(m.membership('tenant-b', 7)).toBe(g);
  });
});

describe('activations', () => {
  test('finding 2: a membership removed by an administrator is not created again by a redelivered activation, nor by a login of the same or an older time', () => {
    const { m } = withRule();
    const activation = user('activated', 10);
    m.deliver(activation);
    expect(m.deleteMembership('tenant-a', 7)).toBe(204);
    expect(m.deliver(activation)).toBe('duplicate');
    expect(m.deliver(user('login', 10, { active: true }))).toBe('applied');
    expect(m.deliver(user('login', 9, { active: true }))).toBe('stale');
    expect(m.membership('tenant-a', 7)).toBeNull();
  });

  test('a learner deactivated and activated again gets the rules applied again', () => {
    const { m, g } = withRule();
    m.deliver(user('activated', 1));
    m.deleteMembership('tenant-a', 7);
    m.deliver(user('updated', 2, { active: false }));
    m.deliver(user('login', 3, { active: true }));
    expect(m.membership('tenant-a', 7)).toBe(g);
  });

  test('user.updated is never an activation; an inactive registration or login is none either', () => {
    const { m } = withRule();
    m.deliver(user('updated', 1, { active: true }));
    m.deliver(user('registered', 2, { active: false }));
    m.deliver(user('login', 3, { active: false }));
    expect(m.membership('tenant-a', 7)).toBeNull();
    m.deliver(user('registered', 4, { active: true }));
    expect(m.membership('tenant-a', 7)).not.toBeNull();
  });

  test('account.activated shows the learner active whatever its is_active says', () => {
    const { m } = withRule();
    m.deliver(user('activated', 1, { active: false }));
    expect(m.user('tenant-a', 7)?.is_active).toBe(true);
    expect(m.membership('tenant-a', 7)).not.toBeNull();
  });

  test('a stale activation applies the rules when newer than the last deactivation and none applied since', () => {
    const { m, g } = withRule();
    m.deliver(user('registered', 3, { active: false }));
    m.deliver(user('updated', 9, { active: true }));
    expect(m.membership('tenant-a', 7)).toBeNull();
    expect(m.deliver(user('activated', 5))).toBe('stale');
    expect(m.membership('tenant-a', 7)).toBe(g);
    // ... and not again: an older deactivation (stale) does not reopen it, a newer one does.
    m.deleteMembership('tenant-a', 7);
    m.deliver(user('registered', 4, { active: false }));
    m.deliver(user('login', 6, { active: true }));
    expect(m.membership('tenant-a', 7)).toBeNull();
  });

  test('an inactive learner gets no membership', () => {
    const { m } = withRule();
    m.deliver(user('registered', 5, { active: false }));
    m.deliver(user('login', 6, { active: false }));
    expect(m.membership('tenant-a', 7)).toBeNull();
  });

  test.each([
    ['in time order', [0, 1]],
    ['the deactivation first', [1, 0]],
  ])('an activation (T1) and a deactivation (T2 > T1), %s: the same end, inactive and a member by the rule', (_name, order) => {
    const { m, g } = withRule();
    const events = [user('activated', 4), user('registered', 5, { active: false })];
    for (const i of order) m.deliver(events[i]!);
    expect(m.membership('tenant-a', 7)).toBe(g);
    expect(m.user('tenant-a', 7)?.is_active).toBe(false);
  });

  test("a late activation applies the rules once per activation period: an administrator's removal after it stands against another of that period and a redelivery", () => {
    const { m } = withRule();
    m.deliver(user('updated', 9, { active: false }));
    const late = user('activated', 4);
    m.deliver(late);
    expect(m.deleteMembership('tenant-a', 7)).toBe(204);
    m.deliver(late);
    m.deliver(user('login', 6, { active: true }));
    m.deliver(user('activated', 3));
    expect(m.membership('tenant-a', 7)).toBeNull();
  });

  test("a late activation of a period the rules were applied in applies nothing (an administrator's removal stands)", () => {
    const { m } = withRule();
    m.deliver(user('activated', 4));
    expect(m.deleteMembership('tenant-a', 7)).toBe(204);
    m.deliver(user('updated', 9, { active: false }));
    m.deliver(user('login', 6, { active: true }));
    expect(m.membership('tenant-a', 7)).toBeNull();
  });

  test.each([
    ['an update showing the learner inactive', () => user('updated', 2, { active: false })],
    ['a retirement', () => retired(2)],
  ])('a deactivation (%s) arriving after a newer login: the login is the activation it is in event time, and its rules apply', (_name, late) => {
    const { m, g } = withRule();
    m.deliver(user('activated', 1));
    expect(m.deleteMembership('tenant-a', 7)).toBe(204);
    m.deliver(user('login', 3, { active: true }));
    expect(m.membership('tenant-a', 7)).toBeNull();
    expect(m.deliver(late())).toBe('stale');
    expect(m.membership('tenant-a', 7)).toBe(g);
  });

  test('an activation between two deactivations that both arrived before it applies its rule: the first of its period', () => {
    const { m, g } = withRule();
    m.deliver(user('updated', 3, { active: false }));
    m.deliver(user('updated', 9, { active: false }));
    m.deliver(user('activated', 5));
    expect(m.membership('tenant-a', 7)).toBe(g);
  });

  test('the rules match the domain after the last @, whatever its case, and never change an existing membership', () => {
    const { m, g } = withRule();
    const manual = m.createGroup('tenant-a', 'manual');
    m.deliver(user('registered', 1, { email: 'a@b@Uni.EDU' }));
    expect(m.createMembership('tenant-a', 7, manual)).toBe(201);
    m.deliver(user('activated', 2, { email: 'a@b@Uni.EDU' }));
    expect(m.membership('tenant-a', 7)).toBe(manual);
    m.deliver(user('activated', 1, { id: 8, email: 'x@y@UNI.edu' }));
    expect(m.membership('tenant-a', 8)).toBe(g);
  });

  test('a retirement, then an activation of the same time (another id): the learner is back, active, a member by the rule', () => {
    const { m, g } = withRule();
    m.deliver(retired(5));
    expect(m.deliver(user('login', 5, { active: true }))).toBe('applied');
    expect(m.trace({ user: 7 }).map((line) => line.split(' ').slice(1).join(' '))).toEqual(['applied 5#1', 'applied 5#2']);
    expect(m.membership('tenant-a', 7)).toBe(g);
  });

  test('a stale retirement counts as a deactivation: an activation older than it applies nothing', () => {
    const { m } = withRule();
    m.deliver(user('updated', 9, { active: true }));
    expect(m.deliver(retired(5))).toBe('stale');
    expect(m.deliver(user('activated', 4))).toBe('stale');
    expect(m.membership('tenant-a', 7)).toBeNull();
    // One newer than the retirement (still stale against the record) does.
    m.deliver(user('activated', 6));
    expect(m.membership('tenant-a', 7)).not.toBeNull();
  });

  test('retire, then register again: the rules apply to the new learner', () => {
    const { m, g } = withRule();
    m.deliver(user('activated', 1));
    m.deliver(retired(2));
    m.deliver(user('registered', 3, { active: true }));
    expect(m.membership('tenant-a', 7)).toBe(g);
  });
});

describe('organizations', () => {
  test('an event without organization goes to DEFAULT_ORGANIZATION (a course: to its key ORG first); without one, to the DLQ', () => {
    const m = new EventModel('tenant-d');
    m.deliver(user('registered', 1, { org: '' }));
    m.deliver(catalog('course-v1:ORGX+C1+R', 1));
    expect(m.user('tenant-d', 7)).not.toBeNull();
    expect(m.course('ORGX', 'course-v1:ORGX+C1+R')).not.toBeNull();
    expect(new EventModel().deliver(user('registered', 1, { org: '' }))).toBe('dead_lettered');
  });
});

describe('access decisions (SPEC §4)', () => {
  test('flag off, public, unknown or inactive user, member of a linked group, otherwise no access', () => {
    const { m, g } = withRule();
    const key = 'course-v1:tenant-a+C1+R';
    m.deliver(catalog(key, 1));
    expect(m.decide(7, key)).toEqual({ allowed: true, reason: 'feature_disabled' });
    m.setFlag('tenant-a', true);
    expect(m.decide(7, key)).toEqual({ allowed: false, reason: 'no_access' });
    m.deliver(user('activated', 1));
    expect(m.decide(7, key)).toEqual({ allowed: false, reason: 'no_access' });
    m.link('tenant-a', key, g);
    expect(m.decide(7, key)).toEqual({ allowed: true, reason: 'group' });
    m.deliver(user('updated', 2, { active: false }));
    expect(m.decide(7, key)).toEqual({ allowed: false, reason: 'no_access' });
    m.makePublic('tenant-a', key);
    expect(m.decide(null, key)).toEqual({ allowed: true, reason: 'public' });
    // A learner of another organization is unknown in the course's.
    m.deliver(user('activated', 1, { id: 8, org: 'tenant-b' }));
    m.makePrivate('tenant-a', key);
    expect(m.decide(8, key)).toEqual({ allowed: false, reason: 'no_access' });
  });
});
