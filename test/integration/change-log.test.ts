// SPEC §4 "a change ... is visible to the very next decision": every write through a Tenant
// moves its collection's data version, the signal caches in every process check.
import { MongoClient, type Db } from 'mongodb';
import { COLLECTIONS, type GroupDoc } from '../../src/db/collections';
import { readDataVersions } from '../../src/db/data-version';
import { Tenant } from '../../src/db/tenant';
import { MONGO_URL, uniqueName } from '../helpers/stack';

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('versions'));
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

test('each Tenant write that changes something moves the version of its collection, and only of its collection', async () => {
  const groups = new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups);
  const seen: (string | undefined)[] = [(await readDataVersions(db)).get(COLLECTIONS.groups)];
  const after = async (write: () => Promise<unknown>) => {
    await write();
    const versions = await readDataVersions(db);
    expect([...versions.keys()]).toEqual([COLLECTIONS.groups]);
    const v = versions.get(COLLECTIONS.groups);
    expect(seen).not.toContain(v); // a value never used before
    seen.push(v);
  };
  await after(() => groups.insertOne({ _id: '1', id: 1, name: 'a', description: '' }));
  await after(() => groups.updateOne({ _id: '1' }, { $set: { name: 'b' } }));
  await after(() => groups.findOneAndUpdate({ _id: '1' }, { $set: { name: 'c' } }));
  await after(() => groups.deleteOne({ _id: '1' }));
  await groups.insertOne({ _id: '3', id: 3, name: 'a', description: '' });
  seen.push((await readDataVersions(db)).get(COLLECTIONS.groups));
  await after(() => groups.deleteMany({}));
  // A write that matched nothing leaves caches alone: the version stays.
  const unchanged = (await readDataVersions(db)).get(COLLECTIONS.groups);
  await groups.deleteOne({ _id: 'missing' });
  await groups.updateOne({ _id: 'missing' }, { $set: { name: 'x' } });
  await groups.findOneAndUpdate({ _id: 'missing' }, { $set: { name: 'x' } });
  expect((await readDataVersions(db)).get(COLLECTIONS.groups)).toBe(unchanged);
  // a refused write may have changed nothing, but moving the version then is harmless
  await groups.insertOne({ _id: '2', id: 2, name: 'a', description: '' });
  await after(() => groups.insertOne({ _id: '2', id: 2, name: 'a', description: '' }).catch(() => undefined));
});

test('findById answers another organization\'s document as missing', async () => {
  await new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: '9', id: 9, name: 'a', description: '' });
  expect(await new Tenant(db, 'org-b').collection<GroupDoc>(COLLECTIONS.groups).findById('9')).toBeNull();
  expect(await new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups).findById('9', { projection: { name: 1 } })).toEqual({
    _id: '9',
    name: 'a',
    org: 'org-a',
  });
});
