// The reference model's activation log (test/helpers/event-model.ts), on hand-written histories:
// the membership follows the first activation of each activation period, replayed in event time,
// whatever the order the events arrived in. Every history here delivers some event late, after a
// newer one; each expectation is what event time gives.
import { EventModel, type RetiredEvent, type UserEvent, type UserEventKind } from '../helpers/event-model';

const LMS = 'openedx/lms/web';
let seq = 0;
const user = (kind: UserEventKind, time: number, o: { active?: boolean; email?: string; org?: string } = {}): UserEvent => ({
  kind,
  source: LMS,
  id: `e${++seq}`,
  time,
  organization: o.org ?? 'tenant-a',
  user: { id: 7, is_active: o.active ?? kind === 'activated', username: 'ann', email: o.email ?? 'ann@uni.edu', name: 'Ann' },
});
/** An activation (always showing the learner active) with this email. */
const activation = (time: number, email = 'ann@uni.edu') => user('activated', time, { email });
/** An update showing the learner inactive: a deactivation. */
const deactivation = (time: number) => user('updated', time, { active: false });
const retired = (time: number): RetiredEvent => ({ kind: 'retired', source: LMS, id: `e${++seq}`, time, organization: 'tenant-a', userId: 7 });

/** tenant-a with group `uni` (rule uni.edu) and group `corp` (rule corp.com); mail.net matches no rule. */
function twoRules() {
  const m = new EventModel();
  const uni = m.createGroup('tenant-a', 'uni');
  const corp = m.createGroup('tenant-a', 'corp');
  expect(m.createRule('tenant-a', 'uni.edu', uni)).toBe(201);
  expect(m.createRule('tenant-a', 'corp.com', corp)).toBe(201);
  const membership = () => m.membership('tenant-a', 7);
  return { m, uni, corp, membership };
}

test('a late activation between two deactivations is the first of its period: its rule applies', () => {
  const { m, uni, membership } = twoRules();
  m.deliver(deactivation(3));
  m.deliver(deactivation(9));
  expect(m.deliver(activation(5))).toBe('stale');
  expect(membership()).toBe(uni);
  expect(m.user('tenant-a', 7)?.is_active).toBe(false);
});

test("a late deactivation splitting a period makes the next activation its period's first: it claims with its own email's rule", () => {
  const { m, corp, membership } = twoRules();
  m.deliver(activation(2, 'ann@uni.edu'));
  // The administrator's removal stands against the activation at 2 (and anything older).
  expect(m.deleteMembership('tenant-a', 7)).toBe(204);
  m.deliver(activation(5, 'ann@corp.com'));
  expect(membership()).toBeNull(); // the same period as the one at 2
  expect(m.deliver(deactivation(3))).toBe('stale');
  expect(membership()).toBe(corp);
});

test('an older activation supersedes the claimed one of its period: its rule, or none when its email matches none', () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(deactivation(1));
  m.deliver(activation(5, 'ann@corp.com'));
  expect(membership()).toBe(corp);
  expect(m.deliver(activation(3, 'ann@uni.edu'))).toBe('stale');
  expect(membership()).toBe(uni);
  m.deliver(activation(2, 'ann@mail.net'));
  expect(membership()).toBeNull();
  // Older than the first deactivation, in a period of its own: the first period's activation with a rule.
  m.deliver(activation(0, 'ann@corp.com'));
  expect(membership()).toBe(corp);
});

test("an administrator's change stands against activations older than it; a newer period's activation applies again", () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(activation(5, 'ann@uni.edu'));
  expect(membership()).toBe(uni);
  expect(m.moveMembership('tenant-a', 7, corp)).toBe(200);
  m.deliver(deactivation(2));
  m.deliver(activation(3, 'ann@uni.edu')); // older than the claim at 5: it would supersede a rule's membership
  expect(membership()).toBe(corp);
  expect(m.deleteMembership('tenant-a', 7)).toBe(204);
  m.deliver(deactivation(4)); // makes the activation at 5 a period's first, but it is not newer than the deletion
  expect(membership()).toBeNull();
  m.deliver(deactivation(6));
  m.deliver(activation(7, 'ann@corp.com'));
  expect(membership()).toBe(corp);
});

test.each([
  ['a stale retirement', () => retired(2)],
  ['a stale event naming another organization (a move in the past)', () => user('updated', 2, { org: 'tenant-b', active: true })],
])('%s deletes the membership born before it; the first activation of a later period then applies', (_name, removal) => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(activation(1, 'ann@uni.edu'));
  m.deliver(deactivation(3));
  m.deliver(activation(5, 'ann@corp.com'));
  expect(membership()).toBe(uni); // the first period's activation, at 1
  expect(m.deliver(removal())).toBe('stale');
  expect(membership()).toBe(corp);
  expect(m.user('tenant-a', 7)).not.toBeNull();
  // An activation older than the removal adds nothing.
  m.deliver(activation(0, 'ann@uni.edu'));
  expect(membership()).toBe(corp);
});

test("a stale retirement deletes an administrator's membership made before it; the activation after it applies", () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(user('updated', 1, { active: true }));
  expect(m.createMembership('tenant-a', 7, corp)).toBe(201); // born at the record's version, 1#1
  m.deliver(activation(4, 'ann@uni.edu'));
  expect(membership()).toBe(corp);
  expect(m.deliver(retired(3))).toBe('stale');
  // In event time: the membership made at 1, the learner retired at 3, back and activated at 4.
  expect(membership()).toBe(uni);
});

test("a stale retirement leaves an administrator's move made after it: the move is the membership's beginning", () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(activation(5, 'ann@uni.edu'));
  m.deliver(activation(4, 'ann@uni.edu')); // the period's activation now: the rule's membership begins at 4
  expect(m.moveMembership('tenant-a', 7, corp)).toBe(200); // at the record's version, 5#1
  expect(membership()).toBe(corp);
  expect(m.deliver(retired(4))).toBe('stale');
  // In event time: activated at 4, retired at 4, back at 5 (uni's rule), then moved to corp.
  expect(membership()).toBe(corp);
  expect(uni).not.toBe(corp);
});

test('the rule is matched when the activation arrives: a rule created later makes nothing of it', () => {
  const { m, membership } = twoRules();
  const early = activation(1, 'ann@mail.net');
  m.deliver(early);
  const net = m.createGroup('tenant-a', 'net');
  expect(m.createRule('tenant-a', 'mail.net', net)).toBe(201);
  expect(m.deliver(early)).toBe('duplicate');
  m.deliver(user('login', 2, { active: true, email: 'ann@mail.net' })); // the same period
  expect(membership()).toBeNull();
  // A later period's activation arrives after the rule: it matches.
  m.deliver(deactivation(3));
  m.deliver(activation(4, 'ann@mail.net'));
  expect(membership()).toBe(net);
});

test('the rule is matched when the activation arrives: one deleted since still names the group in a later replay', () => {
  const { m, uni, membership } = twoRules();
  m.deliver(deactivation(9));
  m.deliver(activation(7, 'ann@uni.edu'));
  expect(membership()).toBe(uni);
  expect(m.deleteRule('tenant-a', 'uni.edu')).toBe(204);
  m.deliver(activation(4, 'ann@mail.net')); // the first of the period now, and no rule
  expect(membership()).toBeNull();
  m.deliver(deactivation(5)); // the one at 7 starts a period again
  expect(membership()).toBe(uni);
});

test("a period's rules are those of its first arrival: a rule created between two arrivals of one period makes nothing of the older, arriving second", () => {
  const { m, membership } = twoRules();
  m.deliver(activation(5, 'ann@mail.net'));
  const net = m.createGroup('tenant-a', 'net');
  expect(m.createRule('tenant-a', 'mail.net', net)).toBe(201);
  expect(m.deliver(activation(3, 'ann@mail.net'))).toBe('stale');
  expect(membership()).toBeNull();
});

test("two email domains in one period: the first of the activation's domain to arrive decides, not the older one arriving after a rule", () => {
  const { m, membership } = twoRules();
  m.deliver(activation(6, 'ann@uni.edu')); // the period's first arrival: uni
  expect(m.deleteRule('tenant-a', 'uni.edu')).toBe(204);
  m.deliver(activation(5, 'ann@mail.net')); // mail.net, no rule yet
  const net = m.createGroup('tenant-a', 'net');
  expect(m.createRule('tenant-a', 'mail.net', net)).toBe(201);
  expect(m.deliver(activation(3, 'ann@mail.net'))).toBe('stale'); // the activation now; mail.net first arrived with no rule
  expect(membership()).toBeNull();
});

test("what a period's first arrival made, gone with its group, is not made again by an older event of the period matching a new rule", () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(activation(5, 'ann@uni.edu'));
  expect(membership()).toBe(uni);
  expect(m.deleteGroup('tenant-a', uni)).toBe(204);
  expect(m.createRule('tenant-a', 'uni.edu', corp)).toBe(201);
  expect(m.deliver(activation(3, 'ann@uni.edu'))).toBe('stale');
  expect(membership()).toBeNull();
});

test('a group deleted takes its memberships; a later event of the period its activation began makes none again', () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(activation(1, 'ann@uni.edu'));
  expect(m.deleteGroup('tenant-a', uni)).toBe(204);
  expect(m.createRule('tenant-a', 'uni.edu', corp)).toBe(201);
  m.deliver(activation(1, 'ann@uni.edu')); // another event of the same time, matching the new rule
  m.deliver(user('login', 2, { active: true }));
  expect(membership()).toBeNull();
});

test('a move here starts the log afresh after the record it replaced: an activation here older than that adds nothing', () => {
  const m = new EventModel();
  const b = m.createGroup('tenant-b', 'b');
  expect(m.createRule('tenant-b', 'uni.edu', b)).toBe(201);
  m.deliver(activation(2)); // in tenant-a, which has no rule
  m.deliver(user('updated', 4, { org: 'tenant-b', active: true }));
  expect(m.membership('tenant-b', 7)).toBeNull();
  // Older than the tenant-a record the move replaced: the learner was in tenant-a then.
  expect(m.deliver(user('activated', 1, { org: 'tenant-b' }))).toBe('stale');
  expect(m.membership('tenant-b', 7)).toBeNull();
  // Between that record and the move: in event time, the activation that brought the learner here.
  expect(m.deliver(user('activated', 3, { org: 'tenant-b' }))).toBe('stale');
  expect(m.membership('tenant-b', 7)).toBe(b);
});

// A group's deletion is no activation (review 2026-12-01, F4): what arrived while the learner was
// in the group found them in it, and made nothing then; it makes nothing after the deletion either.
test('a group the learner was in at an activation, deleted later: the activation applies no rule after it, and an update makes none', () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(user('registered', 1, { active: false }));
  expect(m.createMembership('tenant-a', 7, uni)).toBe(201);
  m.deliver(activation(2, 'ann@corp.com'));
  expect(membership()).toBe(uni);
  expect(m.deleteGroup('tenant-a', uni)).toBe(204);
  m.deliver(user('updated', 3, { email: 'ann@corp.com', active: true }));
  expect(membership()).toBeNull();
  void corp;
});

test('a group deleted before the activation arrives: the activation finds the learner in no group, and its rule applies', () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(user('registered', 1, { active: false }));
  expect(m.createMembership('tenant-a', 7, uni)).toBe(201);
  expect(m.deleteGroup('tenant-a', uni)).toBe(204);
  m.deliver(activation(2, 'ann@corp.com'));
  expect(membership()).toBe(corp);
});

test('after the deletion, a deactivation and an activation older than the newest event open a period of their own: its rule applies', () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(activation(1));
  expect(membership()).toBe(uni);
  m.deliver(user('updated', 9, { active: true }));
  expect(m.deleteGroup('tenant-a', uni)).toBe(204);
  expect(m.deliver(deactivation(3))).toBe('stale');
  expect(m.deliver(activation(4, 'ann@corp.com'))).toBe('stale');
  expect(membership()).toBe(corp);
});

// Review 2026-12-01 (stop 63): the fold against the model with FOLD_RUNS=3000 found the barrier
// outliving the incarnation it was for. Had the move away arrived before the deletion, the
// activation after the return was a new incarnation's, in no group, and its rule applied.
test('a move away older than an activation, arriving after the deletion of the group the learner was in: the activation after the return is of a new incarnation, and its rule applies', () => {
  const { m, uni, corp, membership } = twoRules();
  m.deliver(activation(1));
  m.deliver(activation(4, 'ann@corp.com'));
  expect(membership()).toBe(uni);
  expect(m.deleteGroup('tenant-a', uni)).toBe(204);
  expect(membership()).toBeNull();
  expect(m.deliver(user('updated', 2, { org: 'tenant-b', active: true }))).toBe('stale');
  expect(membership()).toBe(corp);
  // The other order: the move away first, then the deletion (nothing of the learner's in it).
  const other = twoRules();
  other.m.deliver(activation(1));
  other.m.deliver(activation(4, 'ann@corp.com'));
  other.m.deliver(user('updated', 2, { org: 'tenant-b', active: true }));
  expect(other.m.deleteGroup('tenant-a', other.uni)).toBe(204);
  expect(other.membership()).toBe(other.corp);
});
