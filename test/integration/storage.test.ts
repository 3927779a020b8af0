// SPEC §2 (tenancy) and issue #2: the database module against the real local MongoDB-protocol server.
import { MongoClient, type Db } from 'mongodb';
import { COLLECTIONS, ensureIndexes, type GroupDoc, type RuleDoc } from '../../src/db/collections';
import { nextId } from '../../src/db/counters';
import { Tenant } from '../../src/db/tenant';
import { isDuplicateKey } from '../../src/http/errors';
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
  const rules = new Tenant(db, 'org-a').collection<RuleDoc>(COLLECTIONS.rules);
  await rules.insertOne({ _id: 'x|example.com', id: 1, name: 'one', domain: 'example.com', group: 1 });
  // Same public id in the same organization: refused by the {org, id} unique index.
  const err = await rules
    .insertOne({ _id: 'x|other.com', id: 1, name: 'two', domain: 'other.com', group: 1 })
    .catch((e: unknown) => e);
  expect(isDuplicateKey(err)).toBe(true);
  expect(await rules.countDocuments()).toBe(1);
});

test('ids are never handed out twice, even to concurrent callers in several processes', async () => {
  // A second client stands for a second service process: it has its own view of the claims.
  const other = new MongoClient(MONGO_URL);
  const otherDb = other.db(db.databaseName);
  try {
    const ids = await Promise.all(
      Array.from({ length: 40 }, (_, i) => nextId(i % 2 ? db : otherDb, 'things')),
    );
    expect(new Set(ids).size).toBe(40);
    expect(Math.min(...ids)).toBeGreaterThanOrEqual(1);
    const after = await nextId(db, 'things');
    expect(after).toBeGreaterThan(Math.max(...ids.filter((_, i) => i % 2)));
  } finally {
    await other.close();
  }
});
