// The in-memory Db of the domain unit tests (test/helpers/memory-db.ts), where it must act as the
// driver does for src/db to take the same paths: duplicate keys and upserts.
import type { Document } from 'mongodb';
import { isDuplicateKey } from '../../src/db/driver-errors';
import { memoryDb } from '../helpers/memory-db';

type Thing = Document & { _id: string };
const fresh = () => memoryDb().collection<Thing>('things');

test('a taken `_id` refuses insertOne with the E11000 src/db recognizes, and the stored document stays', async () => {
  const things = fresh();
  await things.insertOne({ _id: 'a', v: 1 });
  const err = await things.insertOne({ _id: 'a', v: 2 }).catch((e: unknown) => e);
  expect(isDuplicateKey(err)).toBe(true);
  expect(await things.findOne({ _id: 'a' })).toEqual({ _id: 'a', v: 1 });
});

test('a unique index refuses a second document with its key (a missing field keys as null); a non-unique one does not', async () => {
  const things = fresh();
  await things.createIndexes([{ key: { org: 1, id: 1 }, unique: true }, { key: { org: 1, v: 1 } }]);
  await things.insertOne({ _id: 'a', org: 'o', id: 1, v: 1 });
  await things.insertOne({ _id: 'b', org: 'p', id: 1, v: 1 }); // another org: another key
  await things.insertOne({ _id: 'c', org: 'o', v: 1 });
  expect(isDuplicateKey(await things.insertOne({ _id: 'd', org: 'o', id: 1 }).catch((e: unknown) => e))).toBe(true);
  expect(isDuplicateKey(await things.insertOne({ _id: 'e', org: 'o', id: null }).catch((e: unknown) => e))).toBe(true);
  // An update into a taken key is refused too, and changes nothing.
  expect(isDuplicateKey(await things.updateOne({ _id: 'b' }, { $set: { org: 'o' } }).catch((e: unknown) => e))).toBe(true);
  expect(await things.countDocuments({ org: 'o' })).toBe(2);
});

test("insertMany unordered inserts the rest and throws the driver's bulk error naming each refused index", async () => {
  const things = fresh();
  await things.insertOne({ _id: 'b' });
  const err = (await things.insertMany([{ _id: 'a' }, { _id: 'b' }, { _id: 'c' }, { _id: 'c' }] as Thing[], { ordered: false }).catch((e: unknown) => e)) as {
    writeErrors: { code: number; index: number }[];
  };
  expect(isDuplicateKey(err)).toBe(true);
  expect(err.writeErrors.map((e) => [e.index, e.code])).toEqual([
    [1, 11000],
    [3, 11000],
  ]);
  expect((await things.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual(['a', 'b', 'c']);
  // Ordered (the default) stops at the first refusal.
  await things.insertMany([{ _id: 'd' }, { _id: 'a' }, { _id: 'e' }]).catch(() => undefined);
  expect(await things.countDocuments({})).toBe(4);
});

test("an upsert inserts the filter's equalities with $set and $setOnInsert; one whose filter misses an existing `_id` collides with it", async () => {
  const things = fresh();
  const inserted = await things.updateOne({ _id: 'a', t: { $lt: '2' }, org: 'o' }, { $set: { t: '2' }, $setOnInsert: { n: 0 } }, { upsert: true });
  expect(inserted).toMatchObject({ matchedCount: 0, modifiedCount: 0, upsertedCount: 1, upsertedId: 'a' });
  expect(await things.findOne({ _id: 'a' })).toEqual({ _id: 'a', org: 'o', t: '2', n: 0 });
  // Matched: $setOnInsert is not applied; the same values again modify nothing.
  expect(await things.updateOne({ _id: 'a' }, { $set: { t: '2' }, $setOnInsert: { n: 9 } }, { upsert: true })).toMatchObject({
    matchedCount: 1,
    modifiedCount: 0,
    upsertedId: null,
  });
  // "a, unless a newer version is there": the insert meets the `_id`.
  const err = await things.updateOne({ _id: 'a', t: { $lt: '1' } }, { $set: { t: '1' } }, { upsert: true }).catch((e: unknown) => e);
  expect(isDuplicateKey(err)).toBe(true);
  expect(await things.findOne({ _id: 'a' })).toMatchObject({ t: '2', n: 0 });
});

test('findOneAndUpdate says whether its upsert updated or inserted; bulkWrite lists the refused upserts and applies the rest', async () => {
  const things = fresh();
  const first = await things.findOneAndUpdate({ _id: 'c' }, { $inc: { n: 2 } }, { upsert: true, returnDocument: 'after', includeResultMetadata: true });
  expect(first).toMatchObject({ value: { _id: 'c', n: 2 }, lastErrorObject: { updatedExisting: false, upserted: 'c' } });
  const second = await things.findOneAndUpdate({ _id: 'c' }, { $inc: { n: 2 } }, { upsert: true, returnDocument: 'after', includeResultMetadata: true });
  expect(second).toMatchObject({ value: { _id: 'c', n: 4 }, lastErrorObject: { updatedExisting: true } });
  expect(await things.findOneAndUpdate({ _id: 'c' }, { $inc: { n: 1 } })).toEqual({ _id: 'c', n: 4 }); // before, by default

  await things.insertOne({ _id: 'g', t: '5' });
  const err = (await things
    .bulkWrite(
      [
        { updateOne: { filter: { _id: 'g', t: { $lt: '3' } }, update: { $set: { t: '3' } }, upsert: true } },
        { updateOne: { filter: { _id: 'h', t: { $lt: '3' } }, update: { $set: { t: '3' } }, upsert: true } },
      ],
      { ordered: false },
    )
    .catch((e: unknown) => e)) as { writeErrors: { code: number; index: number }[] };
  expect(err.writeErrors.map((e) => [e.index, e.code])).toEqual([[0, 11000]]);
  expect(
    await things
      .find({ _id: { $in: ['g', 'h'] } })
      .sort({ _id: 1 })
      .toArray(),
  ).toEqual([
    { _id: 'g', t: '5' },
    { _id: 'h', t: '3' },
  ]);
});

test('documents go in and out as copies', async () => {
  const things = fresh();
  const doc = { _id: 'a', tags: ['x'] };
  await things.insertOne(doc);
  doc.tags.push('changed');
  const read = (await things.findOne({ _id: 'a' }))!;
  read.tags.push('changed too');
  expect(await things.findOne({ _id: 'a' })).toEqual({ _id: 'a', tags: ['x'] });
});
