// An adversarial review (2026-11-30) of the DELETE of a link or rule racing PATCHes that change
// what it joins. F1 to F5 failed against the re-keying PATCH and the deleted-id mark that came
// after it. Since links and rules are one document each, found by id (src/domain/by-id.ts), a
// PATCH and a DELETE are each one write of that document, and the races are forced at those
// writes: the DELETE paused between reading its target and deleting it (tracked-writes.ts
// `findOneAndDelete`: a read of a document of the id, then a delete aimed at its `_id`).
import { Collection, type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, type CourseDoc, ensureIndexes, type RuleDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { deleteGroupCourse, updateGroupCourse } from '../../src/domain/group-courses';
import { createRule, deleteRule, updateRule } from '../../src/domain/membership-rules';
import { newGroup } from '../helpers/domain';
import { linkWorld as sharedLinkWorld } from '../helpers/rekey-worlds';
import { MONGO_URL, uniqueName } from '../helpers/stack';
import { gate } from '../helpers/stops';

jest.setTimeout(120_000);

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('review_rekey'));
  await ensureIndexes(db);
});
afterAll(async () => {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
});

type Method = 'findOneAndDelete';
/**
 * Runs `body` with gates on the driver's calls: `before` or `after` the n-th `findOneAndDelete` of a
 * collection. Counted per (method, collection).
 */
async function withGates<T>(
  gates: { method: Method; collection: string; n: number; when: 'before' | 'after'; g: ReturnType<typeof gate> }[],
  body: () => Promise<T>,
): Promise<T> {
  const counts = new Map<string, number>();
  const spies = (['findOneAndDelete'] as const).map((method) => {
    const original = Collection.prototype[method] as (...a: unknown[]) => Promise<unknown>;
    return jest.spyOn(Collection.prototype, method).mockImplementation(async function (this: Collection, ...args: unknown[]) {
      const key = `${method}|${this.collectionName}`;
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      const here = gates.find((x) => x.method === method && x.collection === this.collectionName && x.n === n);
      if (here?.when === 'before') await here.g.stop();
      const result = await original.apply(this, args);
      if (here?.when === 'after') await here.g.stop();
      return result;
    } as never);
  });
  try {
    return await body();
  } finally {
    for (const s of spies) s.mockRestore();
  }
}

const linkWorld = () => sharedLinkWorld(db);

async function ruleWorld() {
  const tenant = new Tenant(db, uniqueName('org'));
  const group = await newGroup(tenant);
  const { id } = await createRule(tenant, { name: 'r', domain: 'd1.example', group });
  const standing = async () => (await tenant.collection<RuleDoc>(COLLECTIONS.rules).find({ id }).toArray()).map((r) => r.domain);
  return { tenant, id, standing };
}

// F1. The DELETE read its target, a PATCH moved the link to C2 (same document, same `_id`), then
// the DELETE's aimed delete ran: it deletes the moved link. As in the order PATCH, DELETE.
test('F1 a DELETE of a link that a PATCH moves between its read and its delete answers 204 and leaves no link of the id', async () => {
  const w = await linkWorld();
  const deleteBeforeAimed = gate();
  let deleted: Promise<boolean> | undefined;
  const patched = await withGates(
    [{ method: 'findOneAndDelete', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: deleteBeforeAimed }],
    async () => {
      deleted = deleteGroupCourse(w.tenant, w.id);
      await deleteBeforeAimed.reached; // the DELETE read C1 as its target
      const p = await updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }); // 200: C2
      deleteBeforeAimed.release();
      await deleted;
      return p;
    },
  );
  expect({ patched: patched?.course.split('+')[1], deleted: await deleted, standing: await w.standing() }).toEqual({
    patched: 'C2',
    deleted: true,
    standing: [],
  });
});

// F2. The same, with a second PATCH building on the first one's move: the DELETE deletes C3.
test('F2 a DELETE of a link answered 204 while two PATCHes move it (the second building on the first): no link of the id stands', async () => {
  const w = await linkWorld();
  const deleteBeforeAimed = gate();
  let deleted: Promise<boolean> | undefined;
  await withGates([{ method: 'findOneAndDelete', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: deleteBeforeAimed }], async () => {
    deleted = deleteGroupCourse(w.tenant, w.id);
    await deleteBeforeAimed.reached;
    await updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! });
    await updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! });
    deleteBeforeAimed.release();
    await deleted;
  });
  expect({ deleted: await deleted, standing: await w.standing(), linked: await w.linked() }).toEqual({
    deleted: true,
    standing: [],
    linked: { C1: 0, C2: 0, C3: 0 },
  });
});

// F3. The rule's version of F1.
test('F3 a DELETE of a rule that a PATCH moves to another domain between its read and its delete answers 204 and leaves no rule of the id', async () => {
  const w = await ruleWorld();
  const deleteBeforeAimed = gate();
  let deleted: Promise<boolean> | undefined;
  await withGates([{ method: 'findOneAndDelete', collection: COLLECTIONS.rules, n: 1, when: 'before', g: deleteBeforeAimed }], async () => {
    deleted = deleteRule(w.tenant, w.id);
    await deleteBeforeAimed.reached;
    await updateRule(w.tenant, w.id, { domain: 'd2.example' });
    deleteBeforeAimed.release();
    await deleted;
  });
  expect({ deleted: await deleted, standing: await w.standing() }).toEqual({ deleted: true, standing: [] });
});

// F4. A DELETE that fails (the database drops the connection, the process dies) answered 500.
// Under the deleted-id mark, the next PATCH finished it (404). A DELETE is now one write: one
// that failed changed nothing, so the link stands, the next PATCH moves it (200) and the next
// DELETE deletes it (204), each course's `linked` following.
test('F4 after a DELETE of a link failed, the link stands: a PATCH moves it (200), a DELETE deletes it (204), `linked` follows', async () => {
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
  const standingAfterFailure = await w.standing();
  const patched = await updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! });
  const linkedAfterPatch = await w.linked();
  const deleted = await deleteGroupCourse(w.tenant, w.id);
  expect({
    failed,
    standingAfterFailure,
    patched: patched?.course.split('+')[1] ?? '404',
    linkedAfterPatch,
    deleted,
    standing: await w.standing(),
    linked: await w.linked(),
  }).toEqual({
    failed: true,
    standingAfterFailure: ['C1'],
    patched: 'C2',
    linkedAfterPatch: { C1: 0, C2: 1, C3: 0 },
    deleted: true,
    standing: [],
    linked: { C1: 0, C2: 0, C3: 0 },
  });
});

// F5. After F1's race no link of the id stands, its new course is not `linked`, and a later
// PATCH of the id answers 404 as for any deleted id.
test('F5 after the race of F1 no link of the id stands, its new course is not `linked`, and a later PATCH answers 404', async () => {
  const w = await linkWorld();
  const deleteBeforeAimed = gate();
  await withGates([{ method: 'findOneAndDelete', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: deleteBeforeAimed }], async () => {
    const deleted = deleteGroupCourse(w.tenant, w.id);
    await deleteBeforeAimed.reached;
    await updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! });
    deleteBeforeAimed.release();
    await deleted;
  });
  const standingBefore = await w.standing();
  const linked = (await w.tenant.collection<CourseDoc>(COLLECTIONS.courses).findById(w.courses[1]!))?.linked;
  const later = await updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! });
  expect({ standingBefore, linked, later: later?.course.split('+')[1] ?? '404' }).toEqual({ standingBefore: [], linked: 0, later: '404' });
});
