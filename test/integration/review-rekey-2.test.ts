// Second adversarial review (2026-12) of the deleted-id mark (src/domain/rekey.ts, 57e56fe) and of
// the `inTurns` scheduler (test/helpers/interleavings.ts). Each test forces one interleaving of
// requests against the real database by pausing a request (told apart by async context) at one
// of its database calls, and asserts what docs/api.md / docs/decisions.md promise. All failed
// when written.
import { Collection, type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes, type RuleDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { deleteGroupCourse, updateGroupCourse } from '../../src/domain/group-courses';
import { createRule, deleteRule, updateRule } from '../../src/domain/membership-rules';
import { newGroup } from '../helpers/domain';
import { inTurns } from '../helpers/interleavings';
import { linkWorld as sharedLinkWorld } from '../helpers/rekey-worlds';
import { MONGO_URL, uniqueName } from '../helpers/stack';
import { gate, withStops } from '../helpers/stops';

jest.setTimeout(120_000);

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('review_rekey2'));
  await ensureIndexes(db);
});
afterAll(async () => {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
});

const linkWorld = () => sharedLinkWorld(db);

const short = (course: string | undefined) => course?.split('+')[1];

// G1. A PATCH that meets the mark deletes every document of the id (deleteAll), including one
// a second PATCH wrote after this PATCH's read, but re-derives `linked` only for the courses it
// read and its own; the DELETE re-derives only what it deleted itself (nothing here). The second
// PATCH's course keeps `linked: 1` with no link: the course-list filter `linked` lies.
test('G1 PATCH A (read C1) / PATCH B C1->C3 whole / DELETE marks / A meets the mark and deletes C3 / DELETE ends: C3 is not left `linked`', async () => {
  const w = await linkWorld();
  const aBeforeInsert = gate();
  const dAfterMark = gate();
  const out = await withStops(
    [
      { who: 'A', method: 'insertOne', n: 1, when: 'before', g: aBeforeInsert }, // after its read of the id (an ungated find)
      { who: 'D', method: 'insertOne', collection: COLLECTIONS.deletedIds, n: 1, when: 'after', g: dAfterMark },
    ],
    async (as) => {
      const a = as('A', () => updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }));
      await aBeforeInsert.reached; // A read [C1]
      const b = await updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! }); // 200: C3, linked
      const d = as('D', () => deleteGroupCourse(w.tenant, w.id));
      await dAfterMark.reached; // the id is marked
      aBeforeInsert.release();
      const aDone = await a; // inserts C2, meets the mark, deletes C3 and C2: 404
      dAfterMark.release();
      return { a: short(aDone?.course) ?? '404', b: short(b?.course), d: await d };
    },
  );
  expect({ ...out, links: await w.allLinks(), linked: await w.linked() }).toEqual({
    a: '404',
    b: 'C3',
    d: true,
    links: [],
    linked: { C1: 0, C2: 0, C3: 0 },
  });
});

// G2. updateRule's in-place branch (same domain) writes `findOneAndUpdate({ _id: old._id })`
// without the id: a PATCH of rule 5 that read it before a DELETE (204) and a createRule of the
// same domain (rule 6, another group) renames rule 6 and moves it into rule 5's group, and
// answers 200 with rule 6's body. Neither serial order touches rule 6.
test("G2 PATCH {name} of rule 5 (read) / DELETE rule 5 / createRule of rule 5's domain (rule 6, other group) / the PATCH ends: 404, rule 6 untouched", async () => {
  const tenant = new Tenant(db, uniqueName('org'));
  const g1 = await newGroup(tenant, 'one');
  const g2 = await newGroup(tenant, 'two');
  const { id } = await createRule(tenant, { name: 'five', domain: 'd1.example', group: g1 });
  const beforeWrite = gate();
  const result = await withStops([{ who: 'P', method: 'insertOne', n: 1, when: 'before', g: beforeWrite }], async (as) => {
    // The in-place branch's first driver call after its (ungated) read is the outbox intent's insertOne.
    const patch = as('P', () => updateRule(tenant, id, { name: 'renamed' }));
    await beforeWrite.reached;
    const deleted = await deleteRule(tenant, id);
    const six = await createRule(tenant, { name: 'six', domain: 'd1.example', group: g2 });
    beforeWrite.release();
    const patched = await patch;
    return { deleted, sixId: six.id, patched: patched ? { id: patched.id, name: patched.name } : '404' };
  });
  const six = await tenant.collection<RuleDoc>(COLLECTIONS.rules).findOne({ id: result.sixId });
  expect({ patchedId: id, sixId: result.sixId, deleted: result.deleted, patched: result.patched, six: { name: six?.name, group: six?.group } }).toEqual({
    patchedId: id,
    sixId: result.sixId,
    deleted: true,
    patched: '404',
    six: { name: 'six', group: g2 },
  });
});

// G3. docs/decisions.md: "a DELETE that died after its mark (answered 500) is finished by the next
// PATCH of the id" (also event-core.md, rekey.ts). Only a re-keying PATCH reads the mark: a PATCH
// of a rule's name (in-place branch), or of a link with its own course, answers 200 and the
// record stands, marked deleted, still matching learners; the next domain PATCH then 404s.
test('G3 after a DELETE of a rule failed past its mark, the next PATCH (of its name) finishes it: 404, no rule of the id', async () => {
  const tenant = new Tenant(db, uniqueName('org'));
  const group = await newGroup(tenant);
  const { id } = await createRule(tenant, { name: 'r', domain: 'd1.example', group });
  const original = Collection.prototype.findOneAndDelete as (...a: unknown[]) => Promise<unknown>;
  const spy = jest.spyOn(Collection.prototype, 'findOneAndDelete').mockImplementation(async function (this: Collection, ...args: unknown[]) {
    if (this.collectionName === COLLECTIONS.rules) throw new Error('connection reset');
    return original.apply(this, args);
  } as never);
  const failed = await deleteRule(tenant, id)
    .then(() => false)
    .catch(() => true)
    .finally(() => spy.mockRestore());
  const patched = await updateRule(tenant, id, { name: 'renamed' });
  const standing = (await tenant.collection<RuleDoc>(COLLECTIONS.rules).find({ id }).toArray()).map((r) => r.name);
  expect({ failed, patched: patched?.name ?? '404', standing }).toEqual({ failed: true, patched: '404', standing: [] });
});

// G4. Two PATCHes of one link onto the same course, both reading the link before either
// inserts: the second's insert meets the first's new document (same id) and answers 400 "must
// make a unique set". Either serial order answers 200 twice (the second finds `_id === old._id`).
// The rule's twin (`taken`, then the insert) answers 400 "already exists" the same way.
test('G4 two PATCHes of one link onto the same course, both having read it: both 200 (as in either order), none 400', async () => {
  const w = await linkWorld();
  const aBeforeInsert = gate();
  const bBeforeInsert = gate();
  const out = await withStops(
    [
      { who: 'A', method: 'insertOne', n: 1, when: 'before', g: aBeforeInsert },
      { who: 'B', method: 'insertOne', n: 1, when: 'before', g: bBeforeInsert },
    ],
    async (as) => {
      const a = as('A', () =>
        updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }).then(
          (d) => short(d?.course) ?? '404',
          (e: Error) => e.message,
        ),
      );
      await aBeforeInsert.reached;
      const b = as('B', () =>
        updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }).then(
          (d) => short(d?.course) ?? '404',
          (e: Error) => e.message,
        ),
      );
      await bBeforeInsert.reached;
      aBeforeInsert.release();
      const aDone = await a;
      bBeforeInsert.release();
      return { a: aDone, b: await b };
    },
  );
  expect({ ...out, standing: await w.standing() }).toEqual({ a: 'C2', b: 'C2', standing: ['C2'] });
});

// G5. `inTurns` says "`turns` says which process makes how many calls in a row". A process whose
// calls overlap (Promise.all: checkReferences, a link's insert, syncCourseFacts, deleteGroup's
// sweep) passes the turn check once per call before the first one ends, so a turn of one call
// lets two through: the other process's call lands third, not second.
test('G5 inTurns: a turn of one call lets one call through, also when the process starts two at once', async () => {
  const counter = db.collection<{ _id: string; n: number }>(uniqueName('turns'));
  const inc = async () => (await counter.findOneAndUpdate({ _id: 'c' }, { $inc: { n: 1 } }, { upsert: true, returnDocument: 'after' }))!.n;
  const order: Record<string, number> = {};
  await inTurns(
    [
      async () => {
        const [x, y] = await Promise.all([inc(), inc()]);
        Object.assign(order, { p0a: x, p0b: y });
      },
      async () => {
        order.p1 = await inc();
      },
    ],
    [
      [0, 1],
      [1, 1],
      [0, Infinity],
    ],
  );
  expect(order.p1).toBe(2);
});
