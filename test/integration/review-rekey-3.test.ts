// Third adversarial review (2026-12) of re-keyed links and rules (group-courses.ts,
// membership-rules.ts at 4d3d097, re-keyed by insert and delete until links and rules became one
// document each, found by id: src/domain/by-id.ts). Each test forces one interleaving against the
// real database by pausing a request (told apart by async context) at one of its driver calls,
// and asserts what docs/api.md / docs/decisions.md promise. All failed when written.
import { Collection, type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes, type RuleDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { applyCatalogInfo } from '../../src/domain/course-event-data';
import { deleteCourse } from '../../src/domain/courses';
import { normalizeEventTime } from '../../src/domain/event-time';
import { createGroupCourse, deleteGroupCourse, updateGroupCourse } from '../../src/domain/group-courses';
import { deleteGroup } from '../../src/domain/groups';
import { createRule, updateRule } from '../../src/domain/membership-rules';
import { newGroup } from '../helpers/domain';
import { linkWorld as sharedLinkWorld } from '../helpers/rekey-worlds';
import { MONGO_URL, uniqueName } from '../helpers/stack';
import { gate, withStops } from '../helpers/stops';

jest.setTimeout(120_000);

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('review_rekey3'));
  await ensureIndexes(db);
});
afterAll(async () => {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
});

/** The shared world, with what stands under the id sorted. */
async function linkWorld() {
  const w = await sharedLinkWorld(db);
  return { ...w, standing: async () => (await w.standing()).sort() };
}

const short = (course: string | undefined) => course?.split('+')[1];
const outcome = <T>(p: Promise<T | null>, show: (d: T) => unknown) =>
  p.then(
    (d) => (d === null ? '404' : show(d)),
    (e: Error) => `${e.constructor.name}: ${JSON.stringify((e as Error & { errors?: unknown }).errors ?? e.message)}`,
  );

async function ruleWorld() {
  const tenant = new Tenant(db, uniqueName('org'));
  const group = await newGroup(tenant);
  const { id } = await createRule(tenant, { name: 'orig', domain: 'd1.example', group });
  const standing = async () =>
    (await tenant.collection<RuleDoc>(COLLECTIONS.rules).find({ id }).toArray())
      .map((r) => ({ domain: r.domain, name: r.name }))
      .sort((a, b) => a.domain.localeCompare(b.domain));
  return { tenant, group, id, standing };
}

// H1. updateRule's in-place branch (domain kept) writes `findOneAndUpdate({ _id: old._id, id })`
// and answers what it returns: when a re-keying PATCH of the same rule replaced that document
// after the read, it matches nothing and the PATCH answers 404 for a rule that stood throughout.
// No DELETE ran, so no order of the two PATCHes gives a 404 (both give 200, 200, {d2, renamed}).
test('H1 PATCH {name} of a rule (read, paused before its update) / PATCH {domain} of it whole / the first ends: 200, not 404', async () => {
  const w = await ruleWorld();
  const beforeUpdate = gate();
  const out = await withStops([{ who: 'N', method: 'findOneAndUpdate', collection: COLLECTIONS.rules, n: 1, when: 'before', g: beforeUpdate }], async (as) => {
    const n = as('N', () => outcome(updateRule(w.tenant, w.id, { name: 'renamed' }), (r) => r.name));
    await beforeUpdate.reached;
    const d = await outcome(updateRule(w.tenant, w.id, { domain: 'd2.example' }), (r) => r.domain);
    beforeUpdate.release();
    return { n: await n, d };
  });
  expect({ ...out, standing: await w.standing() }).toEqual({ n: 'renamed', d: 'd2.example', standing: [{ domain: 'd2.example', name: 'renamed' }] });
});

// H2. A re-keying PATCH of a rule copies the fields it read (`changes = { name: patch.name ??
// old.name, group: ... }`) into its new document and deletes the old one by `_id` whatever was
// written to it meanwhile: an in-place PATCH {name} that ran whole between the read and the
// insert answered 200 and is lost (the rule's group, which decides who joins, is lost the same
// way). Either serial order keeps the name: the re-key reads it, or the rename applies to d2. A
// PATCH now writes only the fields it names, in one write (paused before it).
test('H2 PATCH {domain} of a rule (read, paused before its write) / PATCH {name} whole (200) / the first ends: the name stands', async () => {
  const w = await ruleWorld();
  const beforeInsert = gate();
  const out = await withStops([{ who: 'D', method: 'findOneAndUpdate', collection: COLLECTIONS.rules, n: 1, when: 'before', g: beforeInsert }], async (as) => {
    const d = as('D', () => outcome(updateRule(w.tenant, w.id, { domain: 'd2.example' }), (r) => r.domain));
    await beforeInsert.reached;
    const n = await outcome(updateRule(w.tenant, w.id, { name: 'renamed' }), (r) => r.name);
    beforeInsert.release();
    return { n, d: await d };
  });
  expect({ ...out, standing: await w.standing() }).toEqual({ n: 'renamed', d: 'd2.example', standing: [{ domain: 'd2.example', name: 'renamed' }] });
});

/** Stores a second document of `id` as 0.1.0's re-keying PATCH left it when it died between its insert and its delete. */
async function doubledBy010(collection: string, doc: { _id: string; id: number; org: string } & Record<string, unknown>) {
  await db.collection(collection).insertOne(doc as never);
}

// H3. 0.1.0 re-keyed a link by inserting its new document and then deleting the old one, so one
// that died in between left both under one id (both granting access). The next PATCH of the id
// keeps one document (src/domain/by-id.ts), and the courses' facts follow.
test('H3 a link 0.1.0 left doubled (C1, and C2 under `course|group`) / PATCH {course: C3}: one link stands, the facts follow', async () => {
  const w = await linkWorld();
  await doubledBy010(COLLECTIONS.groupCourses, {
    _id: `${w.courses[1]}|${w.group}`,
    id: w.id,
    org: w.tenant.org,
    course: w.courses[1]!,
    group: w.group,
    born: '',
  });
  const between = await w.standing();
  const moved = await outcome(updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! }), (l) => short(l.course));
  expect({ between, moved, standing: await w.standing(), linked: await w.linked() }).toEqual({
    between: ['C1', 'C2'],
    moved: 'C3',
    standing: ['C3'],
    linked: { C1: 0, C2: 0, C3: 1 },
  });
});

// H3c. A DELETE of a link 0.1.0 left doubled deletes both documents: 204, then 404, every course unlinked.
test('H3c a link 0.1.0 left doubled (C1, and C2 under `course|group`) / DELETE: 204, no document of the id, no course linked; DELETE again: 404', async () => {
  const w = await linkWorld();
  await doubledBy010(COLLECTIONS.groupCourses, {
    _id: `${w.courses[1]}|${w.group}`,
    id: w.id,
    org: w.tenant.org,
    course: w.courses[1]!,
    group: w.group,
    born: '',
  });
  const between = await w.standing();
  const deleted = await deleteGroupCourse(w.tenant, w.id);
  expect({ between, deleted, standing: await w.standing(), linked: await w.linked(), again: await deleteGroupCourse(w.tenant, w.id) }).toEqual({
    between: ['C1', 'C2'],
    deleted: true,
    standing: [],
    linked: { C1: 0, C2: 0, C3: 0 },
    again: false,
  });
});

// H3b. The rule's twin: both documents match learners until the next PATCH of the rule, which
// keeps one, whatever it changes; the next domain PATCH moves that one.
test('H3b a rule 0.1.0 left doubled (d1, and d2 under `org|domain`) / PATCH {name} / PATCH {domain: d3}: one rule stands', async () => {
  const w = await ruleWorld();
  await doubledBy010(COLLECTIONS.rules, { _id: `${w.tenant.org}|d2.example`, id: w.id, org: w.tenant.org, name: 'orig', domain: 'd2.example', group: w.group });
  const doubled = (await w.standing()).length;
  const after = await outcome(updateRule(w.tenant, w.id, { name: 'renamed' }), (r) => r.name);
  const between = (await w.standing()).length;
  const moved = await outcome(updateRule(w.tenant, w.id, { domain: 'd3.example' }), (r) => r.domain);
  const standing = await w.standing();
  expect({ doubled, after, between, moved, domains: standing.map((r) => r.domain) }).toEqual({
    doubled: 2,
    after: 'renamed',
    between: 1,
    moved: 'd3.example',
    domains: ['d3.example'],
  });
});

// H4. A re-keying PATCH that does not name the group, racing the deletion of the link's (or
// rule's) own group: the deletion runs whole between the PATCH's read and its insert (sweeping
// the old document); the insert's re-read of the group (insert/ofLiveGroup) fails and the PATCH
// answers 400 {"group": ["Invalid pk ... does not exist."]} for a field the request never sent.
// Deletion first gives 404 (the link is swept), the PATCH first 200: 400 is neither.
test("H4 link PATCH {course: C2} (read, paused before its write) / deleteGroup of the link's group whole / the PATCH ends: 404, not 400 on group", async () => {
  const w = await linkWorld();
  const beforeInsert = gate();
  const out = await withStops(
    [{ who: 'P', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: beforeInsert }],
    async (as) => {
      const p = as('P', () => outcome(updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }), (l) => short(l.course)));
      await beforeInsert.reached;
      const deleted = await deleteGroup(w.tenant, w.group);
      beforeInsert.release();
      return { deleted, p: await p };
    },
  );
  expect({ ...out, standing: await w.standing() }).toEqual({ deleted: true, p: '404', standing: [] });
});

test("H4b rule PATCH {domain} (read, paused before its write) / deleteGroup of the rule's group whole / the PATCH ends: 404, not 400 on group", async () => {
  const w = await ruleWorld();
  const beforeInsert = gate();
  const out = await withStops([{ who: 'P', method: 'findOneAndUpdate', collection: COLLECTIONS.rules, n: 1, when: 'before', g: beforeInsert }], async (as) => {
    const p = as('P', () => outcome(updateRule(w.tenant, w.id, { domain: 'd2.example' }), (r) => r.domain));
    await beforeInsert.reached;
    const deleted = await deleteGroup(w.tenant, w.group);
    beforeInsert.release();
    return { deleted, p: await p };
  });
  expect({ ...out, standing: await w.standing() }).toEqual({ deleted: true, p: '404', standing: [] });
});

// H5. Under the deleted-id mark, a DELETE that died after its mark was to be finished by the
// next PATCH of the id, whatever it changed (404). A DELETE is now one write: one that failed
// changed nothing, and the next PATCH naming an unknown group is refused on the group (400),
// the link standing, as after any refused PATCH.
test('H5 after a DELETE of a link failed, the next PATCH naming an unknown group is refused on the group (400), the link standing', async () => {
  const w = await linkWorld();
  const original = Collection.prototype.findOneAndDelete as (...a: unknown[]) => Promise<unknown>;
  const spy = jest.spyOn(Collection.prototype, 'findOneAndDelete').mockImplementation(async function (this: Collection, ...args: unknown[]) {
    if (this.collectionName === COLLECTIONS.groupCourses) throw new Error('connection reset');
    return original.apply(this, args);
  } as never);
  const failed = await deleteGroupCourse(w.tenant, w.id)
    .then(() => false)
    .catch(() => true)
    .finally(() => spy.mockRestore());
  const patched = await outcome(updateGroupCourse(w.tenant, w.id, { group: 999_999 }), (l) => l.group);
  expect({ failed, patched, standing: await w.standing() }).toEqual({
    failed: true,
    patched: 'Invalid: "group: Invalid pk \\"999999\\" - object does not exist."',
    standing: ['C1'],
  });
});

// H6. Review of the one-write PATCH (2026-11-30): a PATCH that checked only the parent it changed,
// and removed itself by both fields, missed a second PATCH of the other field. A {course: C2}
// writes after C2's deletion swept; B {group: G3} writes before A reads C2 again; A's removal
// (by course and group) missed, B checked only G3: both 200, the link on a deleted course. Now
// each PATCH reads both parents again and removes the link by the one that is gone.
test('H6 PATCH A {course: C2} (paused before its write) / C2 deleted whole / A writes, paused / PATCH B {group: G3} whole / A ends: no link on the deleted course', async () => {
  const w = await linkWorld();
  const g3 = await newGroup(w.tenant, 'G3');
  const [beforeWrite, afterWrite] = [gate(), gate()];
  const out = await withStops(
    [
      { who: 'A', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: beforeWrite },
      { who: 'A', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'after', g: afterWrite },
    ],
    async (as) => {
      const a = as('A', () => outcome(updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }), (l) => short(l.course)));
      await beforeWrite.reached; // A read C2's birth
      await deleteCourse(db, w.courses[1]!, { time: normalizeEventTime('2026-08-01T00:00:09Z'), id: `d${w.courses[1]}` });
      beforeWrite.release();
      await afterWrite.reached; // A wrote (C2, G1)
      const b = await outcome(updateGroupCourse(w.tenant, w.id, { group: g3 }), (l) => l.group);
      afterWrite.release();
      return { a: await a, b };
    },
  );
  expect({ ...out, standing: await w.standing(), linked: await w.linked() }).toEqual({
    a: 'C2',
    b: g3,
    standing: [],
    linked: { C1: 0, C2: undefined, C3: 0 },
  });
});

// H7. H6 with the group: A {group: G2} writes after G2's deletion swept; B {course: C3} writes
// before A reads G2 again. No link may stand in the deleted group.
test('H7 PATCH A {group: G2} (paused before its write) / G2 deleted whole / A writes, paused / PATCH B {course: C3} whole / A ends: no link in the deleted group', async () => {
  const w = await linkWorld();
  const g2 = await newGroup(w.tenant, 'G2');
  const [beforeWrite, afterWrite] = [gate(), gate()];
  const out = await withStops(
    [
      { who: 'A', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: beforeWrite },
      { who: 'A', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'after', g: afterWrite },
    ],
    async (as) => {
      const a = as('A', () => outcome(updateGroupCourse(w.tenant, w.id, { group: g2 }), (l) => l.group));
      await beforeWrite.reached; // A found G2
      const deleted = await deleteGroup(w.tenant, g2);
      beforeWrite.release();
      await afterWrite.reached; // A wrote (C1, G2)
      const b = await outcome(updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! }), (l) => short(l.course));
      afterWrite.release();
      return { deleted, a: await a, b };
    },
  );
  expect({ ...out, standing: await w.standing(), linked: await w.linked() }).toEqual({
    deleted: true,
    a: g2,
    b: 'C3',
    standing: [],
    linked: { C1: 0, C2: 0, C3: 0 },
  });
});

// H8. A PATCH naming a field already so as read wrote only the others: A {course: C1, group: G2}
// (read at C1) / B {course: C3} whole / A ends answered (C3, G2), which no serial order gives
// (A then B answers C1; B then A ends on C1). Every named field is written.
test('H8 PATCH A {course: C1, group: G2} of a link at C1 (paused before its write) / PATCH B {course: C3} whole / A ends: A answers and leaves (C1, G2)', async () => {
  const w = await linkWorld();
  const g2 = await newGroup(w.tenant, 'G2');
  const beforeWrite = gate();
  const out = await withStops(
    [{ who: 'A', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: beforeWrite }],
    async (as) => {
      const a = as('A', () => outcome(updateGroupCourse(w.tenant, w.id, { course: w.courses[0]!, group: g2 }), (l) => [short(l.course), l.group === g2]));
      await beforeWrite.reached;
      const b = await outcome(updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! }), (l) => short(l.course));
      beforeWrite.release();
      return { a: await a, b };
    },
  );
  expect({ ...out, standing: await w.standing(), linked: await w.linked() }).toEqual({
    a: ['C1', true],
    b: 'C3',
    standing: ['C1'],
    linked: { C1: 1, C2: 0, C3: 0 },
  });
});

// H9. Review (2026-11-30): a group's deletion derived `linked` again for the courses its links had
// when it read them, before its delete. A link PATCHed into the group after that read was deleted
// by the sweep, its course keeping `linked: 1` with no link (the PATCH had synced it first). Now
// each page of the group's links is synced after its delete, and the moved link comes with a page.
test('H9 deleteGroup of G (paused before deleting its links) / PATCH of a link of C1 into G whole / the deletion ends: no link, no course left `linked`', async () => {
  const w = await linkWorld();
  const g = await newGroup(w.tenant, 'G');
  await createGroupCourse(w.tenant, { course: w.courses[2]!, group: g }); // G has a link of its own (C3)
  const beforeDelete = gate();
  const out = await withStops([{ who: 'D', method: 'deleteMany', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: beforeDelete }], async (as) => {
    const d = as('D', () => deleteGroup(w.tenant, g));
    await beforeDelete.reached; // D read G's links (C3)
    const moved = await outcome(updateGroupCourse(w.tenant, w.id, { group: g }), (l) => l.group === g);
    const linkedBetween = await w.linked();
    beforeDelete.release();
    return { moved, linkedBetween, deleted: await d };
  });
  expect({ ...out, links: await w.allLinks(), linked: await w.linked() }).toEqual({
    moved: true,
    linkedBetween: { C1: 1, C2: 0, C3: 1 },
    deleted: true,
    links: [],
    linked: { C1: 0, C2: 0, C3: 0 },
  });
});

// H10. Review (2026-12-01, F3): a link PATCH whose course no longer holds it (the course left and
// came back since the PATCH read its birth) took the link back by id and course alone, and so
// deleted the link another PATCH onto the same course had just written, answered 200 for. It takes
// back only the link it wrote (its `born`).
test('H10 PATCH A {course: C2} (paused before its write) / C2 leaves and comes back / PATCH B {course: C2} reads, A writes, B writes / A ends: B’s link stands', async () => {
  const w = await linkWorld();
  const [aBeforeWrite, aAfterWrite, bBeforeWrite] = [gate(), gate(), gate()];
  const c2 = w.courses[1]!;
  const catalog = (second: number, org: string) =>
    applyCatalogInfo(
      db,
      { catalog_info: { course_key: c2, name: 'C2' }, organization: org },
      { time: normalizeEventTime(`2026-08-01T00:00:0${second}Z`), id: `m${second}${c2}` },
      org,
    );
  const out = await withStops(
    [
      { who: 'A', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: aBeforeWrite },
      { who: 'A', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'after', g: aAfterWrite },
      { who: 'B', method: 'findOneAndUpdate', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: bBeforeWrite },
    ],
    async (as) => {
      const a = as('A', () => outcome(updateGroupCourse(w.tenant, w.id, { course: c2 }), (l) => short(l.course)));
      await aBeforeWrite.reached; // A read C2's birth
      await catalog(5, uniqueName('elsewhere'));
      await catalog(6, w.tenant.org);
      const b = as('B', () => outcome(updateGroupCourse(w.tenant, w.id, { course: c2 }), (l) => short(l.course)));
      await bBeforeWrite.reached; // B read the link (on C1) and C2's birth since its return
      aBeforeWrite.release();
      await aAfterWrite.reached; // A wrote (C2, its birth before the return)
      bBeforeWrite.release();
      const bAnswer = await b; // B wrote (C2, its birth after the return)
      aAfterWrite.release();
      return { a: await a, b: bAnswer };
    },
  );
  expect({ ...out, standing: await w.standing(), linked: await w.linked() }).toEqual({
    a: 'C2',
    b: 'C2',
    standing: ['C2'],
    linked: { C1: 0, C2: 1, C3: 0 },
  });
});

// H11. Black-box round 5 (2026-12-01, F1): a group's deletion read a page of its links, then
// deleted them by id and group; a link PATCHed onto another course between the two was deleted on
// that course, which nothing derived again (the PATCH had marked it linked). A page now deletes
// only links still on a course it read, and the moved link goes with a later page, its course
// derived after.
test('H11 deleteGroup of G (paused after reading a page of its links) / PATCH of its link onto C2 whole / the deletion ends: no link, no course left `linked`', async () => {
  const w = await linkWorld();
  const g = await newGroup(w.tenant, 'G');
  const { id } = await createGroupCourse(w.tenant, { course: w.courses[2]!, group: g });
  const beforeDelete = gate();
  const out = await withStops([{ who: 'D', method: 'deleteMany', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: beforeDelete }], async (as) => {
    const d = as('D', () => deleteGroup(w.tenant, g));
    await beforeDelete.reached; // D read G's links (C3)
    const moved = await outcome(updateGroupCourse(w.tenant, id, { course: w.courses[1]! }), (l) => short(l.course));
    beforeDelete.release();
    return { moved, deleted: await d };
  });
  expect({ ...out, links: await w.allLinks(), linked: await w.linked() }).toEqual({
    moved: 'C2',
    deleted: true,
    links: ['C1'],
    linked: { C1: 1, C2: 0, C3: 0 },
  });
});
