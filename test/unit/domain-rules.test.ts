// Membership rules (docs/events.md, src/domain/membership-rules.ts) over the in-memory Db: the real
// domain functions, no stack. test/integration/events.test.ts and rule-apply.test.ts check the
// same through Kafka and HTTP.
import type { Tenant } from '../../src/db/tenant';
import { applyMembershipRules, applyRuleToExistingUsers } from '../../src/domain/membership-rules';
import { insertMembershipIfAbsent } from '../../src/domain/memberships';
import { isLateFirstActivation, retireUser, type UserFacts, upsertUser } from '../../src/domain/users';
import { addRule, day, facts, groupWithRule, membershipOf, memberships, memoryWorld, newGroup, userOf } from '../helpers/domain';

let tenant: (org: string) => Tenant;
let a: Tenant;
beforeEach(async () => {
  ({ tenant } = await memoryWorld());
  a = tenant('org-a');
});

/** What an activation does: upsert the user as of `time`, then apply the rules to the stored user. */
async function activate(t: Tenant, user: UserFacts, time = day(1)) {
  const { current } = await upsertUser(t, user, time);
  return current && applyMembershipRules(t, current);
}

test("an active user whose email domain has a rule (whatever its case) becomes an automatic member of the rule's group", async () => {
  const group = await groupWithRule(a, 'school.edu');
  const created = await activate(a, facts(1, { domain: 'School.EDU' }));
  expect(created).toMatchObject({ user: 1, group, automatic: true, org: 'org-a' });
  expect(await membershipOf(a, 1)).toEqual(created);
  // The user's list facts follow the membership (src/domain/list-facts.ts).
  expect(await userOf(a, 1)).toMatchObject({ grp: group, member: 1 });
});

test('the last `@` decides the domain; another domain, or a rule of another organization, makes no member', async () => {
  const group = await groupWithRule(a, 'school.edu');
  await groupWithRule(tenant('org-b'), 'other.edu');
  expect(await activate(a, facts(1, { email: 'odd@x@school.edu' }))).toMatchObject({ group });
  expect(await activate(a, facts(2, { domain: 'other.edu' }))).toBeNull();
  expect(await activate(a, facts(3, { email: 'school.edu@elsewhere.org' }))).toBeNull();
  expect((await memberships(a)).map((m) => m.user)).toEqual([1]);
});

test('an existing membership is never changed: a manual one stays as it was', async () => {
  await groupWithRule(a, 'school.edu');
  const other = await newGroup(a, 'Manual');
  const manual = await insertMembershipIfAbsent(a, { user: 1, group: other, automatic: false });
  expect(await activate(a, facts(1, { domain: 'school.edu' }))).toBeNull();
  expect(await membershipOf(a, 1)).toEqual(manual);
});

test('an inactive user gets no membership; their later activation creates it', async () => {
  const group = await groupWithRule(a, 'school.edu');
  expect(await activate(a, facts(1, { domain: 'school.edu', is_active: false }), day(1))).toBeNull();
  expect(await membershipOf(a, 1)).toBeNull();
  expect(await activate(a, facts(1, { domain: 'school.edu' }), day(2))).toMatchObject({ group, automatic: true });
});

test('applying the rules twice, one after the other or at once, leaves one membership', async () => {
  await groupWithRule(a, 'school.edu');
  const user = facts(1, { domain: 'school.edu' });
  await upsertUser(a, user, day(1));
  const stored = (await userOf(a, 1))!;
  expect(await applyMembershipRules(a, stored)).not.toBeNull();
  expect(await applyMembershipRules(a, stored)).toBeNull();
  await upsertUser(a, facts(2, { domain: 'school.edu' }), day(1));
  const second = (await userOf(a, 2))!;
  const both = await Promise.all([applyMembershipRules(a, second), applyMembershipRules(a, second)]);
  expect(both.filter((m) => m !== null)).toHaveLength(1);
  expect((await memberships(a)).map((m) => m.user)).toEqual([1, 2]);
});

test('a rule applied to existing users makes the active matching ones without a membership members, and counts them; again, none', async () => {
  const b = tenant('org-b');
  const partners = await newGroup(a, 'Partners');
  const staff = await newGroup(a, 'Staff');
  await upsertUser(a, facts(1, { email: 'one@Partner.org' }), day(1)); // active, matching: joins
  await upsertUser(a, facts(2, { domain: 'partner.org', is_active: false }), day(1)); // inactive: left out
  await upsertUser(a, facts(3, { domain: 'partner.org' }), day(1)); // already a member of Staff: kept there
  await upsertUser(a, facts(4, { domain: 'other.org' }), day(1)); // another domain
  await upsertUser(a, facts(5, { email: 'weird@x@partner.org' }), day(1)); // the last `@` decides: matches
  await upsertUser(a, facts(7, { domain: 'partner.org' }), day(1)); // joins (on the second page of two)
  await upsertUser(b, facts(6, { domain: 'partner.org' }), day(1)); // another organization
  await insertMembershipIfAbsent(a, { user: 3, group: staff, automatic: false });
  const rule = await addRule(a, 'partner.org', partners);

  expect(await applyRuleToExistingUsers(a, { domain: rule.domain, group: partners }, 2)).toBe(3);
  expect((await memberships(a)).map((m) => [m.user, m.group, m.automatic])).toEqual([
    [1, partners, true],
    [3, staff, false],
    [5, partners, true],
    [7, partners, true],
  ]);
  expect(await memberships(b)).toEqual([]);
  expect(await applyRuleToExistingUsers(a, { domain: rule.domain, group: partners }, 2)).toBe(0);
  expect(await memberships(a)).toHaveLength(4);
});

test('a retirement racing a rule leaves no membership', async () => {
  await groupWithRule(a, 'school.edu');
  await upsertUser(a, facts(1, { domain: 'school.edu' }), day(1));
  // The rule's read of the user, then the whole retirement (tombstone, membership, user), then
  // the rule's insert: the window where the retirement found no membership to delete.
  const read = (await userOf(a, 1))!;
  expect(await retireUser(a, 1, day(2))).toBe('applied');
  expect(await applyMembershipRules(a, read)).toBeNull();
  expect(await membershipOf(a, 1)).toBeNull();
  expect(await userOf(a, 1)).toBeNull();
});

describe('isLateFirstActivation (docs/events.md, late activations)', () => {
  const d = (t: number) => `2026-01-0${t}T00:00:00.000Z#0001`;
  test.each([
    ['no deactivation: not late', {}, d(2), false],
    ['before the first deactivation, no activation claimed', { deact_min_v: d(5) }, d(2), true],
    ['after the first deactivation: not decided, nothing', { deact_min_v: d(3) }, d(4), false],
    ['the first period claimed', { deact_min_v: d(5), act_min_v: d(1) }, d(2), false],
    ['only a later period claimed', { deact_min_v: d(5), act_min_v: d(6), act_v: d(6) }, d(2), true],
    ['settled by a retirement or a move', { deact_min_v: d(5), act_min_v: '0000#0000' }, d(2), false],
    ['claimed before act_min_v was kept', { deact_min_v: d(5), act_v: d(1) }, d(2), false],
  ])('%s', (_name, user, v, late) => {
    expect(isLateFirstActivation(user, v)).toBe(late);
  });
});
