// List facts (src/domain/list-facts.ts): `grp`/`member` of a user and `is_public`/`linked` of a
// course follow the records they are derived from, after each write, over the in-memory Db.
// test/integration/list-facts.test.ts checks the concurrent cases against the real database.
import { COLLECTIONS, type MembershipDoc, type UserDoc } from '../../src/db/collections';
import type { Tenant } from '../../src/db/tenant';
import { upsertCourse } from '../../src/domain/courses';
import { deleteGroupCourse } from '../../src/domain/group-courses';
import { upsertUser } from '../../src/domain/learners';
import { reindexOrganization, syncUserGroups } from '../../src/domain/list-facts';
import { deleteMembership, updateMembership } from '../../src/domain/memberships';
import { createPublicCourse, deletePublicCourse } from '../../src/domain/public-courses';
import { courseOf, day, facts, giveMembership, link, memoryWorld, newGroup, userOf } from '../helpers/domain';

let a: Tenant;
beforeEach(async () => {
  a = (await memoryWorld()).tenant('org-a');
});

const membershipsOf = (t: Tenant) => t.collection<MembershipDoc>(COLLECTIONS.memberships);

test("a user's grp and member follow their membership as it is created, moved and deleted", async () => {
  const [g1, g2] = [await newGroup(a, 'One'), await newGroup(a, 'Two')];
  await upsertUser(a, facts(1), day(1));
  expect(await userOf(a, 1)).toMatchObject({ grp: 0, member: 0 });
  const m = (await giveMembership(a, { user: 1, group: g1, automatic: false }))!;
  expect(await userOf(a, 1)).toMatchObject({ grp: g1, member: 1 });
  await updateMembership(a, m.id, { group: g2 });
  expect(await userOf(a, 1)).toMatchObject({ grp: g2, member: 1 });
  expect(await deleteMembership(a, { id: m.id })).toBe(true);
  expect(await userOf(a, 1)).toMatchObject({ grp: 0, member: 0 });
});

test("a rule's membership shows on the learner as soon as it is made", async () => {
  const group = await newGroup(a);
  await upsertUser(a, facts(2), day(1));
  await giveMembership(a, { user: 2, group, automatic: true });
  expect(await userOf(a, 2)).toMatchObject({ grp: group, member: 1 });
});

test('a sync that finds the facts right writes nothing; one that changes them moves the version', async () => {
  const [g1, g2] = [await newGroup(a, 'One'), await newGroup(a, 'Two')];
  await upsertUser(a, facts(1), day(1));
  await giveMembership(a, { user: 1, group: g1, automatic: false });
  const version = (await userOf(a, 1))!.facts_v;
  await syncUserGroups(a, [1]);
  expect((await userOf(a, 1))!.facts_v).toBe(version);
  await membershipsOf(a).updateOne({ _id: '1' }, { $set: { group: g2 } }); // a write without its sync
  await syncUserGroups(a, [1]);
  expect(await userOf(a, 1)).toMatchObject({ grp: g2, member: 1, facts_v: version + 1 });
});

test("a writer that died before deriving: the user's next event repairs the facts, a duplicate event too", async () => {
  const group = await newGroup(a);
  await upsertUser(a, facts(4), day(1));
  await giveMembership(a, { user: 4, group, automatic: false });
  // The membership written without its sync, as a crash between the two leaves it (the projection unfinished).
  await a.collection('users').updateBookkeeping({ _id: '4' }, { $set: { grp: 0, member: 0 }, $unset: { projected: '' } });
  expect(await userOf(a, 4)).toMatchObject({ grp: 0, member: 0 });
  expect((await upsertUser(a, facts(4), day(1))).outcome).toBe('duplicate');
  expect(await userOf(a, 4)).toMatchObject({ grp: group, member: 1 });
});

test("a course's is_public and linked follow its public record and links", async () => {
  const key = 'course-v1:A+FACTS+1';
  await upsertCourse(a, { key, name: 'Facts' }, day(1));
  expect(await courseOf(a, key)).toMatchObject({ is_public: 0, linked: 0 });
  const [g1, g2] = [await newGroup(a, 'One'), await newGroup(a, 'Two')];
  const first = await link(a, key, g1);
  const second = await link(a, key, g2);
  const record = await createPublicCourse(a, { course: key });
  expect(await courseOf(a, key)).toMatchObject({ is_public: 1, linked: 1 });
  await deleteGroupCourse(a, first.id);
  expect(await courseOf(a, key)).toMatchObject({ linked: 1 }); // one link left
  await deleteGroupCourse(a, second.id);
  await deletePublicCourse(a, record.id);
  expect(await courseOf(a, key)).toMatchObject({ is_public: 0, linked: 0 });
});

test('reindexOrganization derives every fact of records written without them', async () => {
  const group = await newGroup(a);
  const users = a.collection<UserDoc>(COLLECTIONS.users);
  // A user as written before list facts existed: no grp, member, listed or facts_v.
  await users.insertOne({
    _id: '8',
    id: 8,
    username: 'u8',
    name: 'U 8',
    email: 'u8@x.org',
    email_lower: 'u8@x.org',
    is_active: true,
    is_staff: false,
    is_site_admin: true,
    event_time: day(1),
  } as UserDoc);
  await membershipsOf(a).insertOne({ _id: '8', id: 1, user: 8, group, automatic: false });
  expect(await reindexOrganization(a, 2)).toEqual({ users: 1, courses: 0 });
  expect(await userOf(a, 8)).toMatchObject({ grp: group, member: 1, listed: 0 });
});
