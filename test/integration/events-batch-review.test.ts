// Adversarial review of the batch path (consumers/batch.ts, src/domain/import-users.ts) against
// SPEC section 5 and docs/events.md ("Batches"): each case holds the batch to what the per-event
// path leaves for the same events, through the real code on the local stack. The interleavings
// (a crash mid-batch, an administrator's request landing between two of the batch's commands)
// are made exactly, by the state a crash leaves or by running the request at the batch's
// command, never by timing.
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { type EventStamp, eventKey, normalizeEventTime } from '../../src/domain/event-time';
import { createGroup } from '../../src/domain/groups';
import { importUserBatch, type UserLine } from '../../src/domain/import-users';
import type { UserFacts } from '../../src/domain/learners';
import { applyRule, createRule } from '../../src/domain/membership-rules';
import { deleteMembership, updateMembership } from '../../src/domain/memberships';
import { applyUserData, applyUserRetired, type UserEventData } from '../../src/domain/user-event-data';
import { beforeFirst, giveMembership, withHookBefore } from '../helpers/domain';
import { MONGO_URL, uniqueName } from '../helpers/stack';

const ORG = 'review-org';
let mongo: MongoClient;
const databases: Db[] = [];

beforeAll(async () => {
  mongo = await new MongoClient(MONGO_URL).connect();
});
afterAll(async () => {
  for (const db of databases) await db.dropDatabase().catch(() => undefined);
  await mongo.close();
});

async function freshDb(): Promise<Db> {
  const db = mongo.db(uniqueName('review'));
  databases.push(db);
  return db;
}

const stamp = (id: string, seconds: number): EventStamp => ({
  time: normalizeEventTime(new Date(Date.parse('2026-07-01T00:00:00Z') + seconds * 1000).toISOString()),
  id: eventKey('/review', id),
});
const facts = (id: number, email: string, active = true): UserFacts => ({ id, username: `user${id}`, name: `User ${id}`, email, is_active: active });
const asData = (f: UserFacts): UserEventData => ({
  user: { id: f.id, is_active: f.is_active, pii: { username: f.username, email: f.email, name: f.name } },
  organization: ORG,
});
const gramsOf = (db: Db, id: number) => db.collection(COLLECTIONS.userGrams).countDocuments({ org: ORG, r: id });

test('a redelivered run after a crash between a record and its search grams leaves the learners searchable, as the per-event path does', async () => {
  const db = await freshDb();
  const tenant = new Tenant(db, ORG);
  // Two learners no rule matches (one active, one not): nothing pending once written.
  const lines: UserLine[] = [
    { facts: facts(1, 'one@nomatch.example'), at: stamp('a1', 1) },
    { facts: facts(2, 'two@nomatch.example', false), at: stamp('a2', 2) },
  ];
  for (const l of lines) expect(await applyUserData(db, asData(l.facts), l.at, 'registration', ORG)).toBe('applied');
  const whole = [await gramsOf(db, 1), await gramsOf(db, 2)];
  expect(whole[0]).toBeGreaterThan(0);
  expect(whole[1]).toBeGreaterThan(0);

  // The process dies after the records' write and before their grams (the record's projection,
  // which marks it `projected` last: learners.ts): the records are there, their grams are not,
  // and the run's offsets were never resolved. This is that state.
  await db.collection(COLLECTIONS.userGrams).deleteMany({ org: ORG, r: { $in: [1, 2] } });
  await db.collection(COLLECTIONS.users).updateMany({ org: ORG, _id: { $in: ['1', '2'] } } as never, { $unset: { projected: '' } });

  // The broker redelivers the run; the next process's batch applies what it takes, and the
  // consumer applies the rest one by one (consumers/consumer.ts), as here.
  const outcomes = await importUserBatch(tenant, lines);
  expect(outcomes).toEqual(['per-event', 'per-event']);
  for (const [i, outcome] of outcomes.entries()) {
    if (outcome === 'per-event') await applyUserData(db, asData(lines[i]!.facts), lines[i]!.at, 'registration', ORG);
  }

  // A redelivery on the per-event path re-derives the grams ("every event re-derives what is
  // derived from the record, also a duplicate"): the batch must leave the same.
  expect([await gramsOf(db, 1), await gramsOf(db, 2)]).toEqual(whole);
  // And says so: the next redelivery is a duplicate the batch answers itself.
  expect(await importUserBatch(tenant, lines)).toEqual(['duplicate', 'duplicate']);
});

test('the per-event path repairs the same crash state on a redelivery (the control of the test above)', async () => {
  const db = await freshDb();
  const tenant = new Tenant(db, ORG);
  const one = { facts: facts(1, 'one@nomatch.example'), at: stamp('a1', 1) };
  expect(await importUserBatch(tenant, [one, { facts: facts(2, 'x@nomatch.example'), at: stamp('a2', 2) }])).toEqual(['applied', 'applied']);
  const whole = await gramsOf(db, 1);
  await db.collection(COLLECTIONS.userGrams).deleteMany({ org: ORG, r: 1 });
  await db.collection(COLLECTIONS.users).updateOne({ _id: '1' } as never, { $unset: { projected: '' } });
  expect(await applyUserData(db, asData(one.facts), one.at, 'activation', ORG)).toBe('duplicate');
  expect(await gramsOf(db, 1)).toBe(whole);
});

test('a rule created and applied to existing learners while a batch registers a matching learner still gives that learner a membership', async () => {
  const db = await freshDb();
  const tenant = new Tenant(db, ORG);
  const group = await createGroup(tenant, { name: 'Partners', description: '' });
  // The administrator creates the rule for partner.example and applies it to the learners
  // already registered, landing after the batch matched the rules and before it inserted.
  const lines: UserLine[] = [
    { facts: facts(10, 'ten@partner.example'), at: stamp('b10', 10) },
    { facts: facts(11, 'eleven@nomatch.example'), at: stamp('b11', 11) },
  ];
  const outcomes = await beforeFirst(
    'insertMany',
    COLLECTIONS.users,
    () => importUserBatch(tenant, lines),
    async () => {
      const rule = await createRule(new Tenant(db, ORG), { name: 'partners', domain: 'partner.example', group: group.id });
      expect(await applyRule(new Tenant(db, ORG), rule.id)).toBe(0); // the learner is not there yet
    },
  );
  expect(outcomes).toEqual(['applied', 'applied']);

  // Per event, the record is written before the rules are read, so either the event reads the
  // rule or "apply to existing learners" reads the learner: a membership in every interleaving.
  const membership = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: '10' });
  expect(membership?.group).toBe(group.id);
  const user = await tenant.collection<UserDoc>(COLLECTIONS.users).findOne({ _id: '10' });
  expect(user?.grp).toBe(group.id);
});

test('a learner moved to another organization while the batch registers them keeps no membership in the organization they left', async () => {
  const db = await freshDb();
  const OTHER = 'review-other-org';
  const tenant = new Tenant(db, ORG);
  const group = await createGroup(tenant, { name: 'Partners', description: '' });
  await createRule(tenant, { name: 'partners', domain: 'partner.example', group: group.id });
  const moved = facts(20, 'twenty@partner.example');
  // Another partition's newer event names another organization, landing after the batch
  // inserted the learner and before it inserts their rule membership: it moves the learner.
  const hooked = withHookBefore(tenant, COLLECTIONS.memberships, async () => {
    expect(await applyUserData(db, { ...asData(moved), organization: OTHER }, stamp('c20-later', 100), 'update', OTHER)).toBe('applied');
  });
  await importUserBatch(hooked, [
    { facts: moved, at: stamp('c20', 20) },
    { facts: facts(21, 'other@nomatch.example'), at: stamp('c21', 21) },
  ]);

  const user = await db.collection<UserDoc>(COLLECTIONS.users).findOne({ _id: '20' });
  expect(user?.org).toBe(OTHER);
  // docs/events.md, moves: what hangs off the record in the old organization is deleted.
  const left = await db.collection<MembershipDoc>(COLLECTIONS.memberships).find({ user: 20 }).toArray();
  expect(left.map((m) => m.org)).toEqual([]);
  // A membership's key is the user id, whatever the organization: one left behind would make the
  // learner's own organization refuse them any membership ("already a member").
  const there = new Tenant(db, OTHER);
  const theirs = await createGroup(there, { name: 'Theirs', description: '' });
  expect(await giveMembership(there, { user: 20, group: theirs.id, automatic: false })).not.toBeNull();
});

test.each(['moves', 'deletes'])(
  'an administrator who %s the rule membership between its insert and the batch being marked done: the change stands, the list facts follow it, a redelivery changes nothing',
  async (change) => {
    const db = await freshDb();
    const tenant = new Tenant(db, ORG);
    const partners = await createGroup(tenant, { name: 'Partners', description: '' });
    const other = await createGroup(tenant, { name: 'Other', description: '' });
    await createRule(tenant, { name: 'partners', domain: 'partner.example', group: partners.id });
    const admin = new Tenant(db, ORG);
    // After the memberships' insert, at the list facts' sync (its read of users), before the
    // batch's intent is closed: the new records were inserted marked projected, with the list
    // facts of the memberships planned.
    let changed = false;
    const hooked = withHookBefore(
      tenant,
      COLLECTIONS.users,
      async () => {
        changed = true;
        const made = await admin.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: '30' });
        expect(made?.group).toBe(partners.id);
        if (change === 'moves') expect(await updateMembership(admin, made!.id, { group: other.id })).not.toBeNull();
        else expect(await deleteMembership(admin, { id: made!.id })).toBe(true);
      },
      'findByIds',
    );
    const lines: UserLine[] = [
      { facts: facts(30, 'thirty@partner.example'), at: stamp('d30', 30) },
      { facts: facts(31, 'x@nomatch.example'), at: stamp('d31', 31) },
    ];
    expect(await importUserBatch(hooked, lines)).toEqual(['applied', 'applied']);
    expect(changed).toBe(true);
    const expectState = async () => {
      const membership = await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: '30' });
      const user = await tenant.collection<UserDoc>(COLLECTIONS.users).findOne({ _id: '30' });
      const group = change === 'moves' ? other.id : 0;
      expect(membership?.group ?? 0).toBe(group);
      expect([user?.grp, user?.member, user?.projected]).toEqual([group, group === 0 ? 0 : 1, user?.rev]);
    };
    await expectState();
    // The run again (a redelivery), composed as the consumer does: the change still stands.
    const outcomes = await importUserBatch(tenant, lines);
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome === 'per-event') await applyUserData(db, asData(lines[i]!.facts), lines[i]!.at, 'registration', ORG);
    }
    await expectState();
  },
);

// Issue 38, item 3: the batch's settle is checked and followed by a reconciliation, as the
// per-event path's (membership-rules.ts reconcileMembership, `wroteFor`).
test("an older login on another topic (another email, no rule) reconciling between the batch's user insert and its membership insert: the batch takes its membership back, as per event", async () => {
  const db = await freshDb();
  const tenant = new Tenant(db, ORG);
  const group = await createGroup(tenant, { name: 'Partners', description: '' });
  await createRule(tenant, { name: 'partners', domain: 'partner.example', group: group.id });
  const learner = facts(40, 'forty@partner.example');
  // In event time the learner was active first at 35 with an email no rule matches: the period
  // of that activation has no rule, and the activation at 40 of the same period applies none.
  const hooked = withHookBefore(tenant, COLLECTIONS.memberships, async () => {
    const older = { ...learner, email: 'forty@nomatch.example' };
    expect(await applyUserData(db, asData(older), stamp('e40-older', 35), 'activation', ORG)).toBe('stale');
    expect(await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: '40' })).toBeNull();
  });
  expect(await importUserBatch(hooked, [{ facts: learner, at: stamp('e40', 40) }])).toEqual(['applied']);

  expect(await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: '40' })).toBeNull();
  const user = await tenant.collection<UserDoc>(COLLECTIONS.users).findOne({ _id: '40' });
  expect([user?.grp ?? 0, user?.member ?? 0, user?.projected]).toEqual([0, 0, user?.rev]);
  // The control: the same two events per event, in either order, leave no membership.
  const db2 = await freshDb();
  const theirs = await createGroup(new Tenant(db2, ORG), { name: 'Partners', description: '' });
  await createRule(new Tenant(db2, ORG), { name: 'partners', domain: 'partner.example', group: theirs.id });
  expect(await applyUserData(db2, asData(learner), stamp('e40', 40), 'activation', ORG)).toBe('applied');
  expect(await applyUserData(db2, asData({ ...learner, email: 'forty@nomatch.example' }), stamp('e40-older', 35), 'activation', ORG)).toBe('stale');
  expect(await new Tenant(db2, ORG).collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: '40' })).toBeNull();
});

// Issue 38, item 6: the batch path and "apply to existing learners" finish what a deletion or a
// move left, as the per-event path does (versioned-records.ts finishDeletion, finishMove).
test.each(['batch', 'per event'])(
  'a learner registering again (%s) after a retirement whose process died before deleting the membership keeps no old membership',
  async (path) => {
    const db = await freshDb();
    const tenant = new Tenant(db, ORG);
    const group = await createGroup(tenant, { name: 'Partners', description: '' });
    await createRule(tenant, { name: 'partners', domain: 'partner.example', group: group.id });
    const learner = facts(50, 'fifty@partner.example');
    expect(await applyUserData(db, asData(learner), stamp('f50', 10), 'activation', ORG)).toBe('applied');
    const memberships = db.collection<MembershipDoc>(COLLECTIONS.memberships);
    const made = await memberships.findOne({ org: ORG, _id: '50' } as never);
    expect(made?.group).toBe(group.id);
    // The retirement wrote the learner's record, then its process died before the membership
    // (learners.ts project): that state, the organization it left still pending.
    expect(await applyUserRetired(db, 50, stamp('f50-retired', 20))).toBe('applied');
    await memberships.insertOne(made!);
    await db
      .collection(COLLECTIONS.users)
      .updateOne({ _id: '50' } as never, { $set: { left: [{ org: ORG, upTo: `${stamp('f50-retired', 20).time}#0000000002` }] }, $unset: { projected: '' } });

    // Registers again, later, with an address no rule matches. The batch leaves a learner with a
    // record to the per-event path, as the consumer then applies it.
    const again = { facts: { ...learner, email: 'fifty@nomatch.example' }, at: stamp('f50-again', 30) };
    if (path === 'batch') expect(await importUserBatch(tenant, [again])).toEqual(['per-event']);
    expect(await applyUserData(db, asData(again.facts), again.at, 'activation', ORG)).toBe('applied');

    expect(await memberships.findOne({ org: ORG, _id: '50' } as never)).toBeNull();
    const user = await tenant.collection<UserDoc>(COLLECTIONS.users).findOne({ _id: '50' });
    expect([user?.email, user?.grp, user?.member]).toEqual(['fifty@nomatch.example', 0, 0]);
  },
);

test('a learner moved to another organization while a rule is applied to existing learners keeps no membership in the organization they left, and joins by rule there', async () => {
  const db = await freshDb();
  const OTHER = 'review-moved-org';
  const tenant = new Tenant(db, ORG);
  const group = await createGroup(tenant, { name: 'Partners', description: '' });
  const learner = facts(60, 'sixty@partner.example');
  expect(await applyUserData(db, asData(learner), stamp('g60', 10), 'activation', ORG)).toBe('applied');
  const rule = await createRule(tenant, { name: 'partners', domain: 'partner.example', group: group.id });
  const there = new Tenant(db, OTHER);
  const theirs = await createGroup(there, { name: 'Theirs', description: '' });
  await createRule(there, { name: 'partners', domain: 'partner.example', group: theirs.id });
  // A newer event names another organization, landing after the rule's entry was written and
  // before its membership is inserted: the learner moves.
  await beforeFirst(
    'insertOne',
    COLLECTIONS.memberships,
    () => applyRule(tenant, rule.id),
    async () => {
      expect(await applyUserData(db, { ...asData(learner), organization: OTHER }, stamp('g60-moved', 20), 'update', OTHER)).toBe('applied');
    },
  );

  const left = await db.collection<MembershipDoc>(COLLECTIONS.memberships).find({ user: 60, org: ORG }).toArray();
  expect(left).toEqual([]);
  // The learner's next activation there applies that organization's rule.
  await applyUserData(db, { ...asData({ ...learner, is_active: false }), organization: OTHER }, stamp('g60-off', 30), 'update', OTHER);
  await applyUserData(db, { ...asData(learner), organization: OTHER }, stamp('g60-login', 40), 'activation', OTHER);
  expect((await there.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ _id: '60' }))?.group).toBe(theirs.id);
});
