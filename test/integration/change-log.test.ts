// docs/api.md "a change ... is visible to the very next decision": every write through a Tenant
// records which records it changed in its collection's change sequence, which caches in every
// process read.
import { type Db, MongoClient } from 'mongodb';
import { CHANGE_LOG_LENGTH, readChangeLog, recordChanges } from '../../src/db/change-log';
import { COLLECTIONS, type GroupDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { MONGO_URL, uniqueName } from '../helpers/stack';

let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('changes'));
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/** The keys recorded for `collection` since change `after`. */
async function keysSince(collection: string, after: number) {
  const changes = (await readChangeLog(db, [collection])).get(collection);
  return { seq: changes?.seq ?? 0, keys: (changes?.recent ?? []).filter((c) => c.seq > after).map((c) => c.key) };
}

test('each Tenant write that changes something records its record, in its own collection only', async () => {
  const groups = new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups);
  let seq = 0;
  const expectRecorded = async (write: () => Promise<unknown>, keys: (string | null)[]) => {
    await write();
    const got = await keysSince(COLLECTIONS.groups, seq);
    expect(got.keys).toEqual(keys);
    seq = got.seq;
  };
  await expectRecorded(() => groups.insertOne({ _id: '1', id: 1, name: 'a', description: '' }), ['1']);
  await expectRecorded(() => groups.updateOne({ _id: '1' }, { $set: { name: 'b' } }), ['1']);
  await expectRecorded(() => groups.findOneAndUpdate({ id: 1 }, { $set: { name: 'c' } }), ['1']);
  await expectRecorded(() => groups.upsertOne({ _id: '2' }, { $set: { name: 'u', id: 2, description: '' } }), ['2']);
  await expectRecorded(() => groups.deleteOne({ id: 1 }), ['1']);
  await expectRecorded(
    () =>
      groups.insertMany([
        { _id: '3', id: 3, name: 'x', description: '' },
        { _id: '4', id: 4, name: 'y', description: '' },
      ]),
    ['3', '4'],
  );
  // deleteMany names every record it deleted, however the filter found them.
  await expectRecorded(() => groups.deleteMany({ name: { $in: ['x', 'y'] } }), ['3', '4']);
  // Writes that change nothing record nothing: a miss, a no-op $set, a duplicate refused.
  await expectRecorded(async () => {
    await groups.deleteOne({ _id: 'missing' });
    await groups.updateOne({ _id: 'missing' }, { $set: { name: 'x' } });
    await groups.updateOne({ _id: '2' }, { $set: { name: 'u' } });
    await groups.insertOne({ _id: '2', id: 2, name: 'a', description: '' }).catch(() => undefined);
  }, []);
  expect([...(await readChangeLog(db, Object.values(COLLECTIONS))).keys()]).toEqual([COLLECTIONS.groups]);
});

test('the log keeps the newest changes, numbered without gaps, under concurrent writers', async () => {
  const collection = uniqueName('c');
  // Two clients stand for two service processes.
  const other = new MongoClient(MONGO_URL);
  try {
    const otherDb = other.db(db.databaseName);
    const total = CHANGE_LOG_LENGTH + 22;
    await Promise.all(Array.from({ length: total }, (_, i) => recordChanges(i % 2 ? db : otherDb, collection, [{ k: `k${i}`, o: 'org' }])));
    const changes = (await readChangeLog(db, [collection])).get(collection)!;
    expect(changes.seq).toBe(total);
    expect(changes.recent).toHaveLength(CHANGE_LOG_LENGTH);
    expect(changes.recent.map((c) => c.seq)).toEqual(Array.from({ length: CHANGE_LOG_LENGTH }, (_, i) => total - CHANGE_LOG_LENGTH + 1 + i));
    expect(new Set(changes.recent.map((c) => c.key)).size).toBe(CHANGE_LOG_LENGTH);
  } finally {
    await other.close();
  }
});

test('entries keep every character of key, organization and intent, and a log of older sub-document entries still reads', async () => {
  const collection = uniqueName('c');
  const key = 'course-v1:A+"b"|\\ é,\n';
  await db.collection(COLLECTIONS.changeLog).insertOne({ _id: collection, seq: 1, log: [{ k: 'old', o: 'org-a' }] } as never);
  await recordChanges(db, collection, [{ k: key, o: 'org|b', i: 'intent-1' }]);
  await recordChanges(db, collection, [{ k: null, o: 'org-c' }]);
  expect((await readChangeLog(db, [collection])).get(collection)).toEqual({
    seq: 3,
    recent: [
      { seq: 1, key: 'old', org: 'org-a' },
      { seq: 2, key, org: 'org|b', intent: 'intent-1' },
      { seq: 3, key: null, org: 'org-c' },
    ],
  });
});

test("findById answers another organization's document as missing", async () => {
  await new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: '9', id: 9, name: 'a', description: '' });
  expect(await new Tenant(db, 'org-b').collection<GroupDoc>(COLLECTIONS.groups).findById('9')).toBeNull();
  expect(await new Tenant(db, 'org-a').collection<GroupDoc>(COLLECTIONS.groups).findById('9', { projection: { name: 1 } })).toEqual({
    _id: '9',
    name: 'a',
  });
});
