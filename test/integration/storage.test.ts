// docs/api.md (tenancy) and issue #2: the database module against the real local MongoDB-protocol server.
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes, type GroupCourseDoc, type GroupDoc, type RuleDoc } from '../../src/db/collections';
import { nextId } from '../../src/db/counters';
import { isDuplicateKey } from '../../src/db/driver-errors';
import { Tenant } from '../../src/db/tenant';
import { MONGO_URL, uniqueName } from '../helpers/stack';

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('storage'));
  await ensureIndexes(db);
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

test('a document written through a tenant is read back from the server', async () => {
  const tenant = new Tenant(db, 'org-a');
  await tenant.collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: '901', id: 901, name: 'Nurses', description: '' });
  const raw = await db.collection(COLLECTIONS.groups).findOne({ _id: '901' as never });
  expect(raw).toEqual({ _id: '901', id: 901, name: 'Nurses', description: '', org: 'org-a' });
  expect(await tenant.collection<GroupDoc>(COLLECTIONS.groups).findOne({ id: 901 })).toMatchObject({ name: 'Nurses' });
});

test("another organization's record behaves as missing, even when the filter names its org", async () => {
  const a = new Tenant(db, 'org-a');
  const b = new Tenant(db, 'org-b');
  await a.collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: '902', id: 902, name: 'A only', description: '' });
  const groupsOfB = b.collection<GroupDoc>(COLLECTIONS.groups);
  expect(await groupsOfB.findOne({ _id: '902' })).toBeNull();
  expect(await groupsOfB.findOne({ _id: '902', org: 'org-a' })).toBeNull();
  expect((await groupsOfB.deleteOne({ _id: '902' })).deletedCount).toBe(0);
  expect((await groupsOfB.updateOne({ _id: '902' }, { $set: { name: 'hijacked' } })).matchedCount).toBe(0);
  expect(await a.collection<GroupDoc>(COLLECTIONS.groups).findOne({ _id: '902' })).toMatchObject({ name: 'A only' });
});

test('a unique index refuses a duplicate with the error the HTTP layer maps to a 400', async () => {
  const groups = new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups);
  await groups.insertOne({ _id: 'g-1', id: 1, name: 'one', description: '' });
  // Same public id in the same organization: refused by the {org, id} unique index.
  const err = await groups.insertOne({ _id: 'g-2', id: 1, name: 'two', description: '' }).catch((e: unknown) => e);
  expect(isDuplicateKey(err)).toBe(true);
  expect(await groups.countDocuments({ _id: { $in: ['g-1', 'g-2'] } })).toBe(1);
  // A rule's domain is unique by its index: a second rule for the domain, under its own `_id`, is refused.
  const rules = new Tenant(db, 'org-a').collection<RuleDoc>(COLLECTIONS.rules);
  await rules.insertOne({ _id: '1', id: 1, name: 'one', domain: 'example.com', group: 1 });
  const dup = await rules.insertOne({ _id: '2', id: 2, name: 'two', domain: 'example.com', group: 1 }).catch((e: unknown) => e);
  expect(isDuplicateKey(dup)).toBe(true);
  expect(await rules.countDocuments()).toBe(1);
});

test('an index an earlier build made on the same keys without uniqueness is replaced by the unique one (MongoDB refuses the second definition; FerretDB kept the first)', async () => {
  const earlier = client.db(uniqueName('storage_indexes'));
  try {
    // As a build before links and rules were stored by id left them: indexed, not unique, with 0.1.0's `_id`s.
    await earlier.collection(COLLECTIONS.rules).createIndexes([{ key: { org: 1, domain: 1 } }]);
    await earlier.collection(COLLECTIONS.groupCourses).createIndexes([{ key: { org: 1, group: 1, course: 1 } }]);
    const tenant = new Tenant(earlier, 'org-i');
    const rules = tenant.collection<RuleDoc>(COLLECTIONS.rules);
    const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
    await rules.insertOne({ _id: 'org-i|a.example', id: 1, name: 'a', domain: 'a.example', group: 1 });
    await links.insertOne({ _id: 'c1|1', id: 1, course: 'c1', group: 1 });
    // Two processes starting at once, then one more.
    await Promise.all([ensureIndexes(earlier), ensureIndexes(earlier)]);
    await ensureIndexes(earlier);
    const indexesOn = async (name: string, key: string) =>
      (await earlier.collection(name).indexes()).filter((i) => JSON.stringify(i.key) === key).map((i) => ({ name: i.name, unique: i.unique === true }));
    const refused = async (write: () => Promise<unknown>) => isDuplicateKey(await write().catch((e: unknown) => e));
    expect({
      ruleIndexes: await indexesOn(COLLECTIONS.rules, '{"org":1,"domain":1}'),
      linkIndexes: await indexesOn(COLLECTIONS.groupCourses, '{"org":1,"group":1,"course":1}'),
      ruleRefused: await refused(() => rules.insertOne({ _id: '2', id: 2, name: 'two', domain: 'a.example', group: 1 })),
      linkRefused: await refused(() => links.insertOne({ _id: '2', id: 2, course: 'c1', group: 1 })),
      counts: [await rules.countDocuments(), await links.countDocuments()],
    }).toEqual({
      ruleIndexes: [{ name: 'org_1_domain_1_unique', unique: true }],
      linkIndexes: [{ name: 'org_1_group_1_course_1_unique', unique: true }],
      ruleRefused: true,
      linkRefused: true,
      counts: [1, 1],
    });
  } finally {
    await earlier.dropDatabase();
  }
});

test('an update onto a value a unique index holds is refused with the same error, and changes nothing', async () => {
  // MongoDB answers E11000 to an update as to an insert; FerretDB answered InternalError until
  // its patch 0006 (scripts/ferretdb/0006-update-duplicate-key.patch).
  const groups = new Tenant(db, 'org-u').collection<GroupDoc>(COLLECTIONS.groups);
  await groups.insertOne({ _id: 'u-1', id: 1, name: 'one', description: '' });
  await groups.insertOne({ _id: 'u-2', id: 2, name: 'two', description: '' });
  const onto = { $set: { id: 1 } };
  for (const write of [
    () => groups.updateOne({ _id: 'u-2' }, onto),
    () => groups.findOneAndUpdate({ _id: 'u-2' }, onto),
    () => groups.updateMany({ _id: 'u-2' }, onto),
  ]) {
    const err = await write().catch((e: unknown) => e);
    expect({ duplicate: isDuplicateKey(err), code: (err as { code?: number }).code }).toEqual({ duplicate: true, code: 11000 });
  }
  expect((await groups.find({}).toArray()).map((g) => [g._id, g.id])).toEqual([
    ['u-1', 1],
    ['u-2', 2],
  ]);
  // Onto a free value the update goes through.
  expect((await groups.updateOne({ _id: 'u-2' }, { $set: { id: 3 } })).modifiedCount).toBe(1);
});

test("a key lookup answers only the organization's own document, with or without a projection", async () => {
  const a = new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups);
  const b = new Tenant(db, 'org-b').collection<GroupDoc>(COLLECTIONS.groups);
  await a.insertOne({ _id: 'k-1', id: 9001, name: 'A', description: '' });
  expect(await b.findOne({ _id: 'k-1' })).toBeNull();
  expect(await b.findOne({ _id: 'k-1' }, { projection: { _id: 1 } })).toBeNull();
  expect(await b.findOne({ _id: 'k-1' }, { projection: { org: 0 } })).toBeNull();
  expect(await a.findOne({ _id: 'k-1' }, { projection: { name: 1 } })).toMatchObject({ _id: 'k-1', name: 'A' });
  expect(await a.findOne({ _id: 'k-1' }, { projection: { _id: 1 } })).toMatchObject({ _id: 'k-1' });
  expect(await a.findOne({ _id: 'k-1' }, { projection: { org: 0 } })).toMatchObject({ _id: 'k-1', name: 'A' });
  expect([...(await b.findByIds(['k-1', 'nope'])).keys()]).toEqual([]);
  expect([...(await a.findByIds(['k-1', 'nope', 'k-1'])).keys()]).toEqual(['k-1']);
});

test('ids are never handed out twice, even to concurrent callers in several processes', async () => {
  // A second client stands for a second service process: it has its own view of the claims.
  const other = new MongoClient(MONGO_URL);
  const otherDb = other.db(db.databaseName);
  try {
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => nextId(i % 2 ? db : otherDb, 'things')));
    expect(new Set(ids).size).toBe(40);
    expect(Math.min(...ids)).toBeGreaterThanOrEqual(1);
    const after = await nextId(db, 'things');
    expect(after).toBeGreaterThan(Math.max(...ids.filter((_, i) => i % 2)));
  } finally {
    await other.close();
  }
});
