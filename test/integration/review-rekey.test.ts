// An adversarial review (2026-11-30) of the deleted-id mark (src/domain/rekey.ts) as first
// written: a DELETE of a link or rule marked its id, then deleted the id's documents with
// findOneAndDelete until one found nothing; a re-keying PATCH read the mark after its insert and
// took its own document back. F1 to F5 failed then; now a DELETE deletes until a read finds
// none, and a PATCH that meets the mark finishes the DELETE. Each test forces one interleaving
// against the real database by pausing a request between two of its database commands. Since the
// second review every PATCH reads the mark first too, so a PATCH's read of the mark after its
// insert is its second (a second PATCH's, the fourth).
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

type Method = 'findOne' | 'findOneAndDelete';
/**
 * Runs `body` with gates on the driver's calls: `after` the n-th `findOne` of a collection (its
 * answer is in), `before` the n-th `findOneAndDelete` of one. Counted per (method, collection).
 */
async function withGates<T>(
  gates: { method: Method; collection: string; n: number; when: 'before' | 'after'; g: ReturnType<typeof gate> }[],
  body: () => Promise<T>,
): Promise<T> {
  const counts = new Map<string, number>();
  const spies = (['findOne', 'findOneAndDelete'] as const).map((method) => {
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

// F1. The DELETE's findOneAndDelete is two commands (tracked-writes.ts: `target` reads a document
// of the id, then the delete aims at that `_id`). A re-keying PATCH that read no mark (it came
// first) deletes the old document in between: the aimed delete finds nothing, the loop stops,
// and the DELETE answers 404 with the PATCH's new link standing, its id marked deleted.
test('F1 a DELETE of a link that a PATCH re-keys (the PATCH having read no mark) answers 204 and leaves no link of the id', async () => {
  const w = await linkWorld();
  const patchAfterMark = gate();
  const deleteBeforeAimed = gate();
  let deleted: Promise<boolean> | undefined;
  const patched = await withGates(
    [
      { method: 'findOne', collection: COLLECTIONS.deletedIds, n: 2, when: 'after', g: patchAfterMark },
      { method: 'findOneAndDelete', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: deleteBeforeAimed },
    ],
    async () => {
      const patch = updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! });
      await patchAfterMark.reached; // the PATCH inserted C2 and read no mark
      deleted = deleteGroupCourse(w.tenant, w.id);
      await deleteBeforeAimed.reached; // the DELETE marked the id and read C1 as its target
      patchAfterMark.release();
      const p = await patch; // the PATCH deletes C1: 200
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

// F2. The same, with a second PATCH building on the first one's new document: the DELETE deletes
// C1, then targets C2, which the second PATCH deletes (its "replaced"); the loop stops with one
// document deleted, so the DELETE answers 204 while the second PATCH's C3 stands. Exactly what
// docs/api.md and docs/decisions.md say can no longer happen.
test('F2 a DELETE of a link answered 204 while two PATCHes re-key it (the second building on the first): no link of the id stands', async () => {
  const w = await linkWorld();
  const firstAfterMark = gate();
  const secondAfterMark = gate();
  const deleteBeforeSecondAimed = gate();
  let deleted: Promise<boolean> | undefined;
  await withGates(
    [
      { method: 'findOne', collection: COLLECTIONS.deletedIds, n: 2, when: 'after', g: firstAfterMark },
      { method: 'findOne', collection: COLLECTIONS.deletedIds, n: 4, when: 'after', g: secondAfterMark },
      { method: 'findOneAndDelete', collection: COLLECTIONS.groupCourses, n: 2, when: 'before', g: deleteBeforeSecondAimed },
    ],
    async () => {
      const first = updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }).catch(() => null);
      await firstAfterMark.reached; // C1 and C2 stand
      const second = updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! }).catch(() => null);
      await secondAfterMark.reached; // the second read C1 and C2, inserted C3, read no mark
      deleted = deleteGroupCourse(w.tenant, w.id);
      await deleteBeforeSecondAimed.reached; // the DELETE marked, deleted C1, read C2 as its next target
      secondAfterMark.release();
      await second; // deletes C2: replaced
      deleteBeforeSecondAimed.release();
      await deleted;
      firstAfterMark.release();
      await first;
    },
  );
  expect({ deleted: await deleted, standing: await w.standing() }).toEqual({ deleted: true, standing: [] });
});

// F3. The rule's version of F1.
test('F3 a DELETE of a rule that a PATCH moves to another domain (the PATCH having read no mark) answers 204 and leaves no rule of the id', async () => {
  const w = await ruleWorld();
  const patchAfterMark = gate();
  const deleteBeforeAimed = gate();
  let deleted: Promise<boolean> | undefined;
  await withGates(
    [
      { method: 'findOne', collection: COLLECTIONS.deletedIds, n: 2, when: 'after', g: patchAfterMark },
      { method: 'findOneAndDelete', collection: COLLECTIONS.rules, n: 1, when: 'before', g: deleteBeforeAimed },
    ],
    async () => {
      const patch = updateRule(w.tenant, w.id, { domain: 'd2.example' });
      await patchAfterMark.reached;
      deleted = deleteRule(w.tenant, w.id);
      await deleteBeforeAimed.reached;
      patchAfterMark.release();
      await patch;
      deleteBeforeAimed.release();
      await deleted;
    },
  );
  expect({ deleted: await deleted, standing: await w.standing() }).toEqual({ deleted: true, standing: [] });
});

// F4. A DELETE that fails after its mark (the database drops the connection, the process dies)
// leaves the link standing, as the DELETE answered 500. The mark stayed forever and every PATCH
// of its course or group answered 404 while GET still showed the link. Now a PATCH that meets the
// mark finishes the DELETE (it cannot tell a DELETE under way from a dead one, and must not undo
// the first): it answers 404 and the link is gone, its course's `linked` with it.
test('F4 after a DELETE of a link failed past its mark, a PATCH of its course finishes the DELETE: 404, and no link of the id stands', async () => {
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
  const linked = (await w.tenant.collection<CourseDoc>(COLLECTIONS.courses).findByIds(w.courses.slice(0, 2))).values();
  expect({
    failed,
    standingAfterFailure,
    patched: patched?.course.split('+')[1] ?? '404',
    standing: await w.standing(),
    linked: [...linked].map((c) => c.linked),
  }).toEqual({
    failed: true,
    standingAfterFailure: ['C1'],
    patched: '404',
    standing: [],
    linked: [0, 0],
  });
});

// F5. F1's race left C2 standing with its id marked, so a later PATCH answered 404 while GET
// showed the link. Now the DELETE of that race deletes C2 too (F1): nothing stands, and a later
// PATCH of the id answers 404 as for any deleted id.
test('F5 after the race of F1 no link of the id stands, its new course is not `linked`, and a later PATCH answers 404', async () => {
  const w = await linkWorld();
  const patchAfterMark = gate();
  const deleteBeforeAimed = gate();
  await withGates(
    [
      { method: 'findOne', collection: COLLECTIONS.deletedIds, n: 2, when: 'after', g: patchAfterMark },
      { method: 'findOneAndDelete', collection: COLLECTIONS.groupCourses, n: 1, when: 'before', g: deleteBeforeAimed },
    ],
    async () => {
      const patch = updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! });
      await patchAfterMark.reached;
      const deleted = deleteGroupCourse(w.tenant, w.id);
      await deleteBeforeAimed.reached;
      patchAfterMark.release();
      await patch;
      deleteBeforeAimed.release();
      await deleted;
    },
  );
  const standingBefore = await w.standing();
  const linked = (await w.tenant.collection<CourseDoc>(COLLECTIONS.courses).findById(w.courses[1]!))?.linked;
  const later = await updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! });
  expect({ standingBefore, linked, later: later?.course.split('+')[1] ?? '404' }).toEqual({ standingBefore: [], linked: 0, later: '404' });
});
