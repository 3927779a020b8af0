// Membership rules (docs/events.md, src/domain/membership-rules.ts) over the in-memory Db: the real
// domain functions, no stack. test/integration/events.test.ts and rule-apply.test.ts check the
// same through Kafka and HTTP.
import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../../src/db/collections';
import type { Tenant } from '../../src/db/tenant';
import { applyRuleToExistingUsers, reconcileMembership } from '../../src/domain/membership-rules';
import { insertMembershipIfAbsent } from '../../src/domain/memberships';
import { retireUser, type UserFacts, upsertUser } from '../../src/domain/users';
import { addRule, day, facts, groupWithRule, membershipOf, memberships, memoryWorld, newGroup, userOf } from '../helpers/domain';

let tenant: (org: string) => Tenant;
let a: Tenant;
beforeEach(async () => {
  ({ tenant } = await memoryWorld());
  a = tenant('org-a');
});

/** What an activation does (its user upserted as of `time`, the membership reconciled); returns the membership it created, or null. */
async function activate(t: Tenant, user: UserFacts, time = day(1)) {
  const before = await membershipOf(t, user.id);
  const { current } = await upsertUser(t, user, time, user.is_active);
  await reconcileMembership(t, user.id, current);
  const after = await membershipOf(t, user.id);
  return before === null ? after : null;
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

test('reconciling twice, one after the other or at once, leaves one membership', async () => {
  await groupWithRule(a, 'school.edu');
  const { current } = await upsertUser(a, facts(1, { domain: 'school.edu' }), day(1), true);
  await reconcileMembership(a, 1, current);
  await reconcileMembership(a, 1, current);
  const second = await upsertUser(a, facts(2, { domain: 'school.edu' }), day(1), true);
  await Promise.all([reconcileMembership(a, 2, second.current), reconcileMembership(a, 2, second.current)]);
  expect((await memberships(a)).map((m) => m.user)).toEqual([1, 2]);
  const stored = await userOf(a, 2);
  expect(stored?.settled_n).toBe(stored?.log_n);
  expect(stored?.act_log).toEqual([{ v: `${day(1)}#0001`, k: 'a', g: (await membershipOf(a, 2))?.group, i: [`t:${day(1)}`] }]);
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
  await activate(a, facts(1, { domain: 'school.edu' }));
  // As a crash leaves it: logged and matched, the membership not made yet.
  await a.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: '1' });
  await a.collection<UserDoc>(COLLECTIONS.users).updateBookkeeping({ _id: '1' }, { $unset: { settled_n: '' } });
  // The rule's read of the user, then the whole retirement (tombstone, membership, user), then
  // the rule's insert: the window where the retirement found no membership to delete.
  const read = await userOf(a, 1);
  expect(await retireUser(a, 1, day(2))).toBe('applied');
  await reconcileMembership(a, 1, read);
  expect(await membershipOf(a, 1)).toBeNull();
  expect(await userOf(a, 1)).toBeNull();
});
