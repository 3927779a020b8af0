// Membership rules (docs/events.md, src/domain/membership-rules.ts) over the in-memory Db: the real
// domain functions, no stack. test/integration/events.test.ts and rule-apply.test.ts check the
// same through Kafka and HTTP.

import type { Db } from 'mongodb';
import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../../src/db/collections';
import type { Tenant } from '../../src/db/tenant';
import { learnerRecords } from '../../src/db/user-records';
import { deleteGroup } from '../../src/domain/groups';
import { importUserBatch } from '../../src/domain/import-users';
import { project, retireUser, type UserFacts, upsertUser } from '../../src/domain/learners';
import { applyRuleToExistingUsers } from '../../src/domain/membership-rules';
import { createMembership, deleteMembership, updateMembership } from '../../src/domain/memberships';
import {
  addRule,
  day,
  facts,
  giveMembership,
  groupWithRule,
  membershipOf,
  memberships,
  memoryWorld,
  newGroup,
  userOf,
  withHookBefore,
} from '../helpers/domain';

let tenant: (org: string) => Tenant;
let db: Db;
let a: Tenant;
beforeEach(async () => {
  ({ tenant, db } = await memoryWorld());
  a = tenant('org-a');
});

/** What an activation does (its entry in the learner's history, the membership projected); returns the membership it created, or null. */
async function activate(t: Tenant, user: UserFacts, time = day(1)) {
  const before = await membershipOf(t, user.id);
  await upsertUser(t, user, time, user.is_active);
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
  await upsertUser(a, facts(1, { domain: 'school.edu', is_active: false }), day(1), true);
  const manual = await giveMembership(a, { user: 1, group: other, automatic: false });
  expect(manual).toMatchObject({ group: other, automatic: false });
  expect(await activate(a, facts(1, { domain: 'school.edu' }), day(2))).toBeNull();
  expect(await membershipOf(a, 1)).toEqual(manual);
});

test('an inactive user gets no membership; their later activation creates it', async () => {
  const group = await groupWithRule(a, 'school.edu');
  expect(await activate(a, facts(1, { domain: 'school.edu', is_active: false }), day(1))).toBeNull();
  expect(await membershipOf(a, 1)).toBeNull();
  expect(await activate(a, facts(1, { domain: 'school.edu' }), day(2))).toMatchObject({ group, automatic: true });
});

test('an activation applied twice, one after the other or at once, leaves one membership and one entry', async () => {
  const group = await groupWithRule(a, 'school.edu');
  await upsertUser(a, facts(1, { domain: 'school.edu' }), day(1), true);
  expect((await upsertUser(a, facts(1, { domain: 'school.edu' }), day(1), true)).outcome).toBe('duplicate');
  await Promise.all([upsertUser(a, facts(2, { domain: 'school.edu' }), day(1), true), upsertUser(a, facts(2, { domain: 'school.edu' }), day(1), true)]);
  expect((await memberships(a)).map((m) => m.user)).toEqual([1, 2]);
  const stored = await userOf(a, 2);
  expect(stored?.projected).toBe(stored?.rev);
  expect(stored?.h?.entries).toEqual([expect.objectContaining({ kind: 'user', at: day(1), seq: 1, capable: true, rule: group })]);
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
  await giveMembership(a, { user: 3, group: staff, automatic: false });
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
  // As a crash leaves it: the record written, the membership not made yet.
  await a.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: '1' });
  await a.collection<UserDoc>(COLLECTIONS.users).updateBookkeeping({ _id: '1' }, { $unset: { projected: '' } });
  // The projection's read of the record, then the whole retirement, then the projection's
  // writes: the window where the retirement found no membership to delete.
  const read = (await learnerRecords(db).read(1))!;
  expect(await retireUser(db, 1, day(2))).toBe('applied');
  await project(db, read);
  expect(await membershipOf(a, 1)).toBeNull();
  expect(await userOf(a, 1)).toBeNull();
});

// A group's deletion is no activation (review 2026-12-01, F4): the same three histories as the
// reference model's (event-model-activations.test.ts), through the domain's functions.
describe('a group deleted', () => {
  const ann = (over: Partial<UserFacts> = {}) => facts(1, { domain: 'corp.com', ...over });
  let uni: number;
  let corp: number;
  beforeEach(async () => {
    uni = await groupWithRule(a, 'uni.edu');
    corp = await groupWithRule(a, 'corp.com');
  });

  test('after an activation that found the learner in it: the activation applies no rule after it, and an update makes none', async () => {
    await upsertUser(a, ann({ is_active: false }), day(1), true);
    await createMembership(a, { user: 1, group: uni });
    await upsertUser(a, ann(), day(2), true);
    expect((await membershipOf(a, 1))?.group).toBe(uni);
    await deleteGroup(a, uni);
    await upsertUser(a, ann({ name: 'Renamed' }), day(3), false);
    expect(await membershipOf(a, 1)).toBeNull();
  });

  test('before the activation arrives: the activation finds the learner in no group, and its rule applies', async () => {
    await upsertUser(a, ann({ is_active: false }), day(1), true);
    await createMembership(a, { user: 1, group: uni });
    await deleteGroup(a, uni);
    await upsertUser(a, ann(), day(2), true);
    expect(await membershipOf(a, 1)).toMatchObject({ group: corp, automatic: true });
  });

  test('then a deactivation and an activation older than the newest event: a period of their own, whose rule applies', async () => {
    await upsertUser(a, facts(1, { domain: 'uni.edu' }), day(1), true);
    expect((await membershipOf(a, 1))?.group).toBe(uni);
    await upsertUser(a, facts(1, { domain: 'uni.edu' }), day(9), false);
    await deleteGroup(a, uni);
    await upsertUser(a, ann({ is_active: false }), day(3), false);
    await upsertUser(a, ann(), day(4), true);
    expect(await membershipOf(a, 1)).toMatchObject({ group: corp, automatic: true });
  });

  // Stop 62's closing note: a move carried whatever membership the walk had at its place, so a
  // late activation that re-made one there (the learner's group since deleted) changed who made it.
  test('after an administrator moved the learner out of it: older events arriving then leave the moved membership as the move made it', async () => {
    // Learner 1 sees the older events after the move and the deletion; learner 2 before both.
    const story = async (user: number, lateFirst: boolean) => {
      const learner = (over: Partial<UserFacts> = {}) => facts(user, { domain: 'corp.com', ...over });
      const [from, to] = [await newGroup(a, `From ${user}`), await newGroup(a, `To ${user}`)];
      const late = async () => {
        await upsertUser(a, learner({ is_active: false }), day(3), false);
        await upsertUser(a, learner(), day(4), true);
        await upsertUser(a, learner({ is_active: false }), day(5), false);
      };
      await upsertUser(a, learner(), day(1), false);
      const made = await createMembership(a, { user, group: from });
      await upsertUser(a, learner(), day(9), false);
      if (lateFirst) await late();
      await updateMembership(a, made.id, { group: to });
      await deleteGroup(a, from);
      if (!lateFirst) await late();
      const { _id, id, user: _, rev, ...membership } = (await membershipOf(a, user))!;
      return { ...membership, group: membership.group === to ? 'to' : membership.group };
    };
    const after = await story(1, false);
    expect(after).toMatchObject({ group: 'to', automatic: false });
    expect(after).toEqual(await story(2, true));
  });
});

// Black-box round 5 (2026-12-01), F2: an activation read the rules before a rule of its domain
// existed; after its write it reads them again, and one created meanwhile makes it join. An
// administrator who gave the learner a membership and removed it in that window came after the
// activation (they saw the learner): their removal stands, and the late read makes no membership.
describe('a rule created while an activation arrived, after an administrator changed the learner', () => {
  const meanwhile = (group: number) => async () => {
    const made = await createMembership(a, { user: 1, group });
    expect(await deleteMembership(a, { id: made.id })).toBe(true);
    await addRule(a, 'late.edu', group);
  };

  test('the batch path: no membership', async () => {
    const group = await newGroup(a, 'Late');
    const hooked = withHookBefore(a, COLLECTIONS.userGrams, meanwhile(group));
    expect(
      await importUserBatch(hooked, [
        { facts: facts(1, { domain: 'late.edu' }), at: { time: day(1), id: 'e1' } },
        { facts: facts(2), at: { time: day(1), id: 'e2' } },
      ]),
    ).toEqual(['applied', 'applied']);
    expect(await membershipOf(a, 1)).toBeNull();
  });

  /**
   * `a`, with `meanwhile` run before its second read of the rules (the activation then written
   * and projected), and `after` right after that read, before its rule completes the activation.
   */
  const beforeSecondRead = (meanwhile: () => Promise<void>, after: () => Promise<void> = async () => {}) => {
    const hooked = Object.create(a) as Tenant;
    const seen = { reads: 0 };
    hooked.collection = ((name: string) => {
      const real = a.collection(name as never);
      if (name !== COLLECTIONS.rules) return real;
      return Object.assign(Object.create(real), {
        find: (...args: Parameters<typeof real.find>) =>
          ++seen.reads === 2
            ? {
                toArray: async () => {
                  await meanwhile();
                  const found = await real.find(...args).toArray();
                  await after();
                  return found;
                },
              }
            : real.find(...args),
      });
    }) as Tenant['collection'];
    return { hooked, seen };
  };

  test('one by one, a move away and back in the window: the learner here is another incarnation, with no activation, and no membership', async () => {
    const group = await newGroup(a, 'Late');
    const { hooked, seen } = beforeSecondRead(async () => {
      await upsertUser(tenant('org-b'), facts(1, { domain: 'late.edu' }), day(2));
      await upsertUser(a, facts(1, { domain: 'late.edu' }), day(3));
      await addRule(a, 'late.edu', group);
    });
    await upsertUser(hooked, facts(1, { domain: 'late.edu' }), day(1), true);
    expect({ reads: seen.reads, membership: await membershipOf(a, 1) }).toEqual({ reads: 2, membership: null });
  });

  test('one by one, nothing in the window but the rule: the late read makes the membership', async () => {
    const group = await newGroup(a, 'Late');
    const { hooked, seen } = beforeSecondRead(async () => void (await addRule(a, 'late.edu', group)));
    await upsertUser(hooked, facts(1, { domain: 'late.edu' }), day(1), true);
    expect(seen.reads).toBe(2);
    expect(await membershipOf(a, 1)).toMatchObject({ group, automatic: true });
  });

  test('one by one: no membership', async () => {
    const group = await newGroup(a, 'Late');
    const { hooked, seen } = beforeSecondRead(meanwhile(group));
    await upsertUser(hooked, facts(1, { domain: 'late.edu' }), day(1), true);
    expect(seen.reads).toBe(2);
    expect(await membershipOf(a, 1)).toBeNull();
  });

  // The rule's read is part of the arrival (learners.ts `completeArrivalRule`): had the first
  // read seen the rule, the activation made the membership and the deactivation kept it. The
  // join that finished the arrival before refused a learner inactive by then.
  test('one by one, a newer deactivation in the window: the activation made the membership, and it stays', async () => {
    const group = await newGroup(a, 'Late');
    const { hooked, seen } = beforeSecondRead(async () => {
      await upsertUser(a, facts(1, { domain: 'late.edu', is_active: false }), day(2));
      await addRule(a, 'late.edu', group);
    });
    await upsertUser(hooked, facts(1, { domain: 'late.edu' }), day(1), true);
    expect(seen.reads).toBe(2);
    expect(await membershipOf(a, 1)).toMatchObject({ group, automatic: true });
    expect(await userOf(a, 1)).toMatchObject({ is_active: false });
  });

  test('the batch path, a newer deactivation in the window: the same', async () => {
    const group = await newGroup(a, 'Late');
    const hooked = withHookBefore(a, COLLECTIONS.userGrams, async () => {
      await upsertUser(a, facts(1, { domain: 'late.edu', is_active: false }), day(2));
      await addRule(a, 'late.edu', group);
    });
    await importUserBatch(hooked, [
      { facts: facts(1, { domain: 'late.edu' }), at: { time: day(1), id: 'e1' } },
      { facts: facts(2), at: { time: day(1), id: 'e2' } },
    ]);
    expect(await membershipOf(a, 1)).toMatchObject({ group, automatic: true });
  });

  // Review of this stop's diff (round 2), F1: the rule found by the second read was deleted, with
  // its group, before it completed the activation; a reactivation had arrived meanwhile, its
  // `gone` reckoned without that group, and the completed activation's membership in it kept the
  // reactivation from applying its rule. Had the first read seen the rule, the learner was in G2.
  test('one by one, the rule found deleted with its group before it completes the activation, then a new period: the new period’s rule applies', async () => {
    const g = await newGroup(a, 'G');
    let g2 = 0;
    const { hooked, seen } = beforeSecondRead(
      async () => void (await addRule(a, 'late.edu', g)),
      async () => {
        await deleteGroup(a, g);
        g2 = await newGroup(a, 'G2');
        await addRule(a, 'late.edu', g2);
        await upsertUser(a, facts(1, { domain: 'late.edu', is_active: false }), day(2), true);
        await upsertUser(a, facts(1, { domain: 'late.edu' }), day(3), true);
      },
    );
    await upsertUser(hooked, facts(1, { domain: 'late.edu' }), day(1), true);
    expect(seen.reads).toBe(2);
    expect(await membershipOf(a, 1)).toMatchObject({ group: g2, automatic: true });
  });

  test('without the administrator, the late read still makes the membership', async () => {
    const group = await newGroup(a, 'Late');
    const hooked = withHookBefore(a, COLLECTIONS.userGrams, async () => void (await addRule(a, 'late.edu', group)));
    await importUserBatch(hooked, [
      { facts: facts(1, { domain: 'late.edu' }), at: { time: day(1), id: 'e1' } },
      { facts: facts(2), at: { time: day(1), id: 'e2' } },
    ]);
    expect(await membershipOf(a, 1)).toMatchObject({ group, automatic: true });
  });
});
