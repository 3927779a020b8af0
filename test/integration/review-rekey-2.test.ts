// Second adversarial review (2026-12) of the deleted-id mark (57e56fe, since replaced by one
// document per link and rule, found by id: src/domain/by-id.ts) and of the `inTurns` scheduler
// (test/helpers/interleavings.ts). Each test forces one interleaving of
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

// G1. Under the deleted-id mark, a PATCH that met the mark deleted a second PATCH's document but
// re-derived `linked` only for the courses it had read: C3 kept `linked: 1` with no link. Now A,
// paused after its read, writes nothing once the DELETE took the link (its write finds no
// document of the id): 404, and every course's `linked` is the links'.
test('G1 PATCH A (read C1) / PATCH B C1->C3 whole / DELETE whole / A ends: 404, and C3 is not left `linked`', async () => {
  const w = await linkWorld();
  const aBeforeInsert = gate();
  const out = await withStops(
    [{ who: 'A', method: 'insertOne', n: 1, when: 'before', g: aBeforeInsert }], // its outbox intent, after its reads
    async (as) => {
      const a = as('A', () => updateGroupCourse(w.tenant, w.id, { course: w.courses[1]! }));
      await aBeforeInsert.reached; // A read [C1]
      const b = await updateGroupCourse(w.tenant, w.id, { course: w.courses[2]! }); // 200: C3, linked
      const d = await deleteGroupCourse(w.tenant, w.id);
      aBeforeInsert.release();
      const aDone = await a;
      return { a: short(aDone?.course) ?? '404', b: short(b?.course), d };
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
    // The PATCH's first insertOne is its outbox intent's, after its (ungated) reads and before its write.
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

// G3. Under the deleted-id mark, a DELETE that died after its mark was to be finished by the next
// PATCH (404). A DELETE is now one write: one that failed changed nothing, so the next PATCH of
// the rule's name answers 200 and the rule stands, renamed; a DELETE then deletes it.
test('G3 after a DELETE of a rule failed, the rule stands: the next PATCH (of its name) answers 200, a DELETE then 204', async () => {
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
  const names = async () => (await tenant.collection<RuleDoc>(COLLECTIONS.rules).find({ id }).toArray()).map((r) => r.name);
  const standing = await names();
  const deleted = await deleteRule(tenant, id);
  expect({ failed, patched: patched?.name ?? '404', standing, deleted, after: await names() }).toEqual({
    failed: true,
    patched: 'renamed',
    standing: ['renamed'],
    deleted: true,
    after: [],
  });
});

// G4. Two PATCHes of one link onto the same course, both reading the link before either writes:
// the re-keying PATCH's second insert met the first's new document and answered 400 "must make a
// unique set". Either serial order answers 200 twice; so does the one write of each now.
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
