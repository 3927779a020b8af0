/**
 * SPEC §5: apart from events of one time, the outcome of a set of events does not depend on the
 * order they arrive in (one learner's events come on two topics, so any order is possible). Each
 * history here is delivered in every order, each order to a learner of its own, and must end in
 * the membership that applying its events in event time gives (docs/events.md, activations in
 * event time); then every event delivered again changes nothing. The later tests reproduce two
 * processes, a killed process and an administrator acting in the middle of one event.
 */
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes, type GroupCourseDoc, type MembershipDoc, type PublicCourseDoc, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { applyCatalogInfo } from '../../src/domain/course-event-data';
import { deleteCourse } from '../../src/domain/courses';
import { type EventStamp, normalizeEventTime } from '../../src/domain/event-time';
import { createGroupCourse } from '../../src/domain/group-courses';
import { project, upsertUser } from '../../src/domain/learners';
import { createMembership, deleteMembership, updateMembership } from '../../src/domain/memberships';
import { createPublicCourse } from '../../src/domain/public-courses';
import { applyUserData, applyUserRetired, type UserEventKind } from '../../src/domain/user-event-data';
import { groupWithRule, membershipOf, newGroup } from '../helpers/domain';
import { MONGO_URL, uniqueName } from '../helpers/stack';

// Every order of a history is applied in turn: 5 s alone for the longest, and more than 30 s
// beside the import tests' load on one FerretDB in a clean-clone CI run.
jest.setTimeout(120000);

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('arrival'));
  await ensureIndexes(db);
});
afterAll(async () => {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
});

/**
 * What a process killed between a learner's write and its projection leaves (learners.ts
 * `project`): the record written, its membership not brought in line, not marked projected.
 */
async function killedBeforeProjection(tenant: Tenant, user: number) {
  await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).deleteOne({ _id: String(user) });
  await db.collection<UserDoc>(COLLECTIONS.users).updateOne({ _id: String(user) }, { $unset: { projected: '' } });
}

/** One event of a history: a user event (`domain` of its email, `org`: the home one unless named) or a retirement. */
type Step = { kind: UserEventKind; t: number; domain: string; active?: boolean; org?: 'elsewhere' } | { kind: 'retired'; t: number };

const at = (t: number, step: number): EventStamp => ({ time: normalizeEventTime(`2026-09-01T00:00:${String(t).padStart(2, '0')}Z`), id: `e${step}` });

/** Every order of `xs`. */
const orders = <T>(xs: T[]): T[][] =>
  xs.length <= 1 ? [xs] : xs.flatMap((x, i) => orders([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));

let nextUser = 7000;

/** A fresh organization with rules: corp.com -> "corp", uni.edu -> "uni"; and its other group. */
async function organization() {
  const tenant = new Tenant(db, uniqueName('arrival-org'));
  const groups = { corp: await groupWithRule(tenant, 'corp.com'), uni: await groupWithRule(tenant, 'uni.edu'), other: await newGroup(tenant, 'Other') };
  return { tenant, groups };
}

async function deliver(tenant: Tenant, user: number, step: Step, index: number) {
  if (step.kind === 'retired') return applyUserRetired(db, user, at(step.t, index));
  const data = { user: { id: user, is_active: step.active ?? true, pii: { username: `u${user}`, email: `u${user}@${step.domain}`, name: 'U' } } };
  return applyUserData(db, data, at(step.t, index), step.kind, step.org === 'elsewhere' ? `${tenant.org}-elsewhere` : tenant.org);
}

/** The group (by rule name) the learner's membership is in, after `steps` arrive in every order; one entry per order. */
type Groups = Awaited<ReturnType<typeof organization>>['groups'];

async function outcomes(steps: Step[], before: (tenant: Tenant, user: number, groups: Groups) => Promise<void> = async () => undefined) {
  const ends: { order: string; group: string | null; again: string | null }[] = [];
  // One organization for all the orders: each order's learner is one of its own (memberships, claims and admin marks are per learner).
  const { tenant, groups } = await organization();
  for (const order of orders(steps.map((s, i) => ({ s, i })))) {
    const user = nextUser++;
    await before(tenant, user, groups);
    for (const { s, i } of order) await deliver(tenant, user, s, i);
    const name = (m: MembershipDoc | null) => (m ? (Object.entries(groups).find(([, id]) => id === m.group)?.[0] ?? `group ${m.group}`) : null);
    const group = name(await membershipOf(tenant, user));
    // Every event again, in the same order: nothing changes (no rule applies twice).
    for (const { s, i } of order) await deliver(tenant, user, s, i);
    ends.push({ order: order.map(({ i }) => i).join(''), group, again: name(await membershipOf(tenant, user)) });
  }
  return ends;
}

const everyOrder = (group: string | null, steps: Step[]) => orders(steps).map(() => expect.objectContaining({ group, again: group }));

test('two activations of one period on two topics (login t5 corp.com, activation t6 uni.edu): the older one decides, in every order', async () => {
  const steps: Step[] = [
    { kind: 'registration', t: 5, domain: 'corp.com' },
    { kind: 'activation', t: 6, domain: 'uni.edu' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('corp', steps));
});

test('the activation matches its own email, not a newer one an update brought (activation t5 corp.com, update t6 uni.edu)', async () => {
  const steps: Step[] = [
    { kind: 'activation', t: 5, domain: 'corp.com' },
    { kind: 'update', t: 6, domain: 'uni.edu' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('corp', steps));
});

test('an older activation matching no rule takes back what the newer one of its period made (login t5 mail.net, activation t6 uni.edu)', async () => {
  const steps: Step[] = [
    { kind: 'registration', t: 5, domain: 'mail.net' },
    { kind: 'activation', t: 6, domain: 'uni.edu' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder(null, steps));
});

test('a retirement arriving after the learner came back deletes what the activation before it made; the one after it applies (t3 corp.com, retired t5, t6 uni.edu)', async () => {
  const steps: Step[] = [
    { kind: 'registration', t: 3, domain: 'corp.com' },
    { kind: 'retired', t: 5 },
    { kind: 'registration', t: 6, domain: 'uni.edu' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('uni', steps));
});

test('an older event of another organization is a move in the past: the membership made before it goes (activation t3 corp.com, t5 elsewhere, update t9)', async () => {
  const steps: Step[] = [
    { kind: 'activation', t: 3, domain: 'corp.com' },
    { kind: 'update', t: 5, domain: 'corp.com', org: 'elsewhere' },
    { kind: 'update', t: 9, domain: 'corp.com' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder(null, steps));
});

test('in the first period too, the oldest activation decides (t2 uni.edu, deactivated t4, t1 corp.com)', async () => {
  const steps: Step[] = [
    { kind: 'registration', t: 2, domain: 'uni.edu' },
    { kind: 'update', t: 4, domain: 'uni.edu', active: false },
    { kind: 'registration', t: 1, domain: 'corp.com' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('corp', steps));
});

test('an activation between two deactivations applies its rule, whichever of the three arrives last (deactivated t1, t3 corp.com, deactivated t5)', async () => {
  const steps: Step[] = [
    { kind: 'update', t: 1, domain: 'corp.com', active: false },
    { kind: 'registration', t: 3, domain: 'corp.com' },
    { kind: 'update', t: 5, domain: 'corp.com', active: false },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('corp', steps));
});

test("a late deactivation makes the activation right after it its period's first, with that one's email (t2 mail.net, deactivated t4, t5 uni.edu, t7 corp.com)", async () => {
  const steps: Step[] = [
    { kind: 'registration', t: 2, domain: 'mail.net' },
    { kind: 'update', t: 4, domain: 'mail.net', active: false },
    { kind: 'activation', t: 5, domain: 'uni.edu' },
    { kind: 'registration', t: 7, domain: 'corp.com' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('uni', steps));
});

test("an administrator's change to the membership stands against an older activation of the period arriving after it", async () => {
  for (const change of ['move', 'delete'] as const) {
    const { tenant, groups } = await organization();
    const user = nextUser++;
    await deliver(tenant, user, { kind: 'activation', t: 6, domain: 'uni.edu' }, 1);
    const made = (await membershipOf(tenant, user))!;
    expect(made.group).toBe(groups.uni);
    if (change === 'move') await updateMembership(tenant, made.id, { group: groups.other });
    else await deleteMembership(tenant, { id: made.id });
    await deliver(tenant, user, { kind: 'registration', t: 5, domain: 'corp.com' }, 2);
    expect((await membershipOf(tenant, user))?.group ?? null).toBe(change === 'move' ? groups.other : null);
    // Its redelivery changes nothing either.
    await deliver(tenant, user, { kind: 'registration', t: 5, domain: 'corp.com' }, 2);
    expect((await membershipOf(tenant, user))?.group ?? null).toBe(change === 'move' ? groups.other : null);
  }
});

test('an older activation arriving while the claim it supersedes is pending (its process died before the rules) settles it: the pending one applies nothing later', async () => {
  const { tenant } = await organization();
  const user = nextUser++;
  await deliver(tenant, user, { kind: 'activation', t: 6, domain: 'uni.edu' }, 1);
  // As a process killed between the record and its projection leaves it: written, no membership.
  await killedBeforeProjection(tenant, user);
  await deliver(tenant, user, { kind: 'registration', t: 5, domain: 'mail.net' }, 2);
  await deliver(tenant, user, { kind: 'activation', t: 6, domain: 'uni.edu' }, 1);
  expect(await membershipOf(tenant, user)).toBeNull();
  const stored = await tenant.collection<UserDoc>(COLLECTIONS.users).findById(String(user));
  expect(stored?.projected).toBe(stored?.rev);
});

test("a first-period activation matching nothing takes back what its period made, and the later period's claim then applies (t5 mail.net, t6 uni.edu, deactivated t8, t9 corp.com)", async () => {
  const steps: Step[] = [
    { kind: 'registration', t: 5, domain: 'mail.net' },
    { kind: 'activation', t: 6, domain: 'uni.edu' },
    { kind: 'update', t: 8, domain: 'uni.edu', active: false },
    { kind: 'registration', t: 9, domain: 'corp.com' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('corp', steps));
});

test('a late retirement takes back what the activation before it made, and the claim after it then applies (t3 corp.com, deactivated t4, retired t5, t6 uni.edu)', async () => {
  const steps: Step[] = [
    { kind: 'registration', t: 3, domain: 'corp.com' },
    { kind: 'update', t: 4, domain: 'corp.com', active: false },
    { kind: 'retired', t: 5 },
    { kind: 'registration', t: 6, domain: 'uni.edu' },
  ];
  expect(await outcomes(steps)).toEqual(everyOrder('uni', steps));
});

test("an administrator's delete stands against an older activation of its period arriving after a later period claimed (admin_v)", async () => {
  // Activation t6 uni.edu, then the administrator deletes the membership; then these, in every order.
  const before = async (tenant: Tenant, user: number) => {
    await deliver(tenant, user, { kind: 'activation', t: 6, domain: 'uni.edu' }, 9);
    await deleteMembership(tenant, { id: (await membershipOf(tenant, user))!.id });
  };
  const steps: Step[] = [
    { kind: 'update', t: 8, domain: 'uni.edu', active: false },
    { kind: 'registration', t: 9, domain: 'corp.com' },
    { kind: 'registration', t: 5, domain: 'uni.edu' },
  ];
  expect(await outcomes(steps, before)).toEqual(everyOrder('corp', steps));
});

test('two processes: the activation that created the learner finishes its rules after an older one superseded its claim; what they made goes', async () => {
  const { tenant } = await organization();
  const user = nextUser++;
  const facts = { id: user, username: `u${user}`, name: 'U', email: `u${user}@uni.edu`, is_active: true };
  // Process 1 writes activation t6 and stops before its projection ...
  const first = await upsertUser(tenant, facts, at(6, 1), true);
  await killedBeforeProjection(tenant, user);
  // ... process 2 applies registration t5 mail.net whole ...
  await deliver(tenant, user, { kind: 'registration', t: 5, domain: 'mail.net' }, 2);
  // ... and process 1 goes on with its projection of the record it wrote.
  await project(db, first.current!);
  expect(await membershipOf(tenant, user)).toBeNull();
});

test('two processes: a reconciliation whose delete lands after another process settled a newer log reads again and settles that log (t5 corp.com; t3 mail.net late, and deactivated t4 meanwhile)', async () => {
  const { tenant, groups } = await organization();
  const user = nextUser++;
  await deliver(tenant, user, { kind: 'registration', t: 5, domain: 'corp.com' }, 1);
  // Process 1 logs the late t3 mail.net: its period's first, matching nothing, so the membership t5 made goes ...
  const facts = { id: user, username: `u${user}`, name: 'U', email: `u${user}@mail.net`, is_active: true };
  const late = await upsertUser(tenant, facts, at(3, 2), true);
  await killedBeforeProjection(tenant, user);
  // ... but before its projection, process 2 applies deactivated t4 whole: t5 is its period's
  // first again, the membership stands; process 1's projection then finds a newer record.
  await deliver(tenant, user, { kind: 'update', t: 4, domain: 'corp.com', active: false }, 3);
  await project(db, late.current!);
  expect((await membershipOf(tenant, user))?.group).toBe(groups.corp);
  const stored = await tenant.collection<UserDoc>(COLLECTIONS.users).findById(String(user));
  expect(stored?.projected).toBe(stored?.rev);
});

test("an administrator's delete racing an older activation wins: the rules read the administrator's mark after their write", async () => {
  const { tenant } = await organization();
  const user = nextUser++;
  await deliver(tenant, user, { kind: 'activation', t: 6, domain: 'uni.edu' }, 1);
  const facts = { id: user, username: `u${user}`, name: 'U', email: `u${user}@corp.com`, is_active: true };
  const late = await upsertUser(tenant, facts, at(5, 2), true);
  await deleteMembership(tenant, { id: (await membershipOf(tenant, user))!.id });
  await project(db, late.current!);
  expect(await membershipOf(tenant, user)).toBeNull();
});

test('a claim whose process died before its rules applies them on the next event, though that one shows the learner inactive', async () => {
  const { tenant, groups } = await organization();
  const user = nextUser++;
  await deliver(tenant, user, { kind: 'activation', t: 5, domain: 'uni.edu' }, 1);
  // As a process killed between the record and its projection leaves it.
  await killedBeforeProjection(tenant, user);
  await deliver(tenant, user, { kind: 'update', t: 6, domain: 'uni.edu', active: false }, 2);
  expect((await membershipOf(tenant, user))?.group).toBe(groups.uni);
});

test('a move in the past deletes the membership an administrator made before it in event time (made after t1; then t5 and t3 elsewhere, in either order)', async () => {
  const before = async (tenant: Tenant, user: number, groups: Groups) => {
    await deliver(tenant, user, { kind: 'registration', t: 1, domain: 'mail.net' }, 9);
    await createMembership(tenant, { user, group: groups.other });
  };
  const steps: Step[] = [
    { kind: 'update', t: 5, domain: 'mail.net' },
    { kind: 'activation', t: 3, domain: 'mail.net', org: 'elsewhere' },
  ];
  expect(await outcomes(steps, before)).toEqual(everyOrder(null, steps));
});

/** A course's event: its catalog info (`org`: the home organization unless named) or its deletion. */
type CourseStep = { kind: 'catalog'; t: number; org?: 'elsewhere' } | { kind: 'deleted'; t: number };

/**
 * For courses, after `steps` arrive in every order, each order to a course of its own linked to a
 * group and made public by an administrator at version t1: whether the link and the public
 * record are still there (one entry per order).
 */
async function courseOutcomes(steps: CourseStep[]) {
  const { tenant, groups } = await organization();
  const ends: { order: string; linked: boolean; public: boolean }[] = [];
  for (const order of orders(steps.map((s, i) => ({ s, i })))) {
    const key = `course-v1:${tenant.org}+C${nextUser++}+R`;
    const catalog = (t: number, index: number, org = tenant.org) => applyCatalogInfo(db, { catalog_info: { course_key: key, name: 'C' } }, at(t, index), org);
    await catalog(1, 9);
    await createGroupCourse(tenant, { course: key, group: groups.corp });
    await createPublicCourse(tenant, { course: key });
    for (const { s, i } of order) {
      if (s.kind === 'deleted') await deleteCourse(db, key, at(s.t, i));
      else await catalog(s.t, i, s.org === 'elsewhere' ? `${tenant.org}-elsewhere` : tenant.org);
    }
    const linked = await tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).has({ course: key });
    const isPublic = await tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).has({ _id: key });
    ends.push({ order: order.map(({ i }) => i).join(''), linked, public: isPublic });
  }
  return ends;
}

const everyCourseOrder = (kept: boolean, steps: CourseStep[]) => orders(steps).map(() => expect.objectContaining({ linked: kept, public: kept }));

test('a course deleted at t3 and created again at t5: what an administrator hung on it at t1 went with the deletion, in either order', async () => {
  const steps: CourseStep[] = [
    { kind: 'deleted', t: 3 },
    { kind: 'catalog', t: 5 },
  ];
  expect(await courseOutcomes(steps)).toEqual(everyCourseOrder(false, steps));
});

test('a course in another organization at t3 and back at t5 (a move in the past): what an administrator hung on it at t1 went with the move, in either order', async () => {
  const steps: CourseStep[] = [
    { kind: 'catalog', t: 3, org: 'elsewhere' },
    { kind: 'catalog', t: 5 },
  ];
  expect(await courseOutcomes(steps)).toEqual(everyCourseOrder(false, steps));
});

test('a course updated at t3 and t5 keeps its link and public record, in either order', async () => {
  const steps: CourseStep[] = [
    { kind: 'catalog', t: 3 },
    { kind: 'catalog', t: 5 },
  ];
  expect(await courseOutcomes(steps)).toEqual(everyCourseOrder(true, steps));
});
