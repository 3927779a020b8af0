/**
 * `npx tsx bench/upgrade-writes.ts [--users N]`: where the learner-histories upgrade
 * (src/db/upgrades.ts) spends its time on the server at MONGO_URL, and what other write shapes
 * would cost. Seeds N users of the old shape (as bench/upgrade.ts does) into a scratch database per
 * row, reads them as a pass does (batches of 500), then writes each user's new shape:
 *
 * - `updateOne`: what the upgrade does, one conditional update a user, 64 a command;
 * - `replaceOne`: the whole new document, conditional, 64 a command;
 * - `insert into a new collection`: insertMany of 500 into another collection (a copy that would
 *   then replace the collection; not safe while an older version still writes: docs/operations.md).
 *
 * Prints one Markdown row per shape (users a second for the writes, and for reading plus writing)
 * and drops the databases. Asserts nothing.
 */
import { parseArgs } from 'node:util';
import { type Db, type Document, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes } from '../src/db/collections';
import { LEARNER_HISTORIES } from '../src/db/upgrades';
import { oldShapeUser } from './seed';

const { values } = parseArgs({ options: { users: { type: 'string', default: '10000' } } });
const N = Number(values.users);
const BATCH = 500;

async function seedOldShape(db: Db): Promise<void> {
  const docs = Array.from({ length: N }, (_, i) => {
    const id = i + 1;
    return oldShapeUser(id, { username: `first${id}`, name: 'First Last', email: `first.last${id}@word${id % 50}.example.com`, active: id % 50 !== 0 });
  });
  for (let i = 0; i < N; i += 5000) await db.collection(COLLECTIONS.users).insertMany(docs.slice(i, i + 5000) as never, { ordered: false });
}

/** The user as the upgrade leaves it: its $set applied, its $unset removed. */
function upgraded(doc: Document, prepared: unknown): Document {
  const op = LEARNER_HISTORIES.upgrade(doc, prepared) as { updateOne: { update: { $set: Document; $unset: Document } } };
  const next: Document = { ...doc, ...op.updateOne.update.$set };
  for (const k of Object.keys(op.updateOne.update.$unset)) delete next[k];
  return next;
}

type Shape = 'updateOne' | 'replaceOne' | 'insert into a new collection';

async function row(client: MongoClient, shape: Shape): Promise<string> {
  const db = client.db(`bench_upgrade_writes_${Date.now()}`);
  try {
    await ensureIndexes(db);
    await seedOldShape(db);
    const users = db.collection(COLLECTIONS.users);
    const copy = db.collection(`${COLLECTIONS.users}_next`);
    let readMs = 0;
    let writeMs = 0;
    const write = async (batch: Document[]) => {
      const prepared = await LEARNER_HISTORIES.prepare!(db, batch);
      const t = Date.now();
      if (shape === 'insert into a new collection') {
        await copy.insertMany(batch.map((d) => upgraded(d, prepared)) as never, { ordered: false });
      } else {
        const ops = batch.map((d) =>
          shape === 'updateOne'
            ? LEARNER_HISTORIES.upgrade(d, prepared)
            : { replaceOne: { filter: { _id: d._id, h: { $exists: false } }, replacement: upgraded(d, prepared) } },
        );
        for (let i = 0; i < ops.length; i += 64) await users.bulkWrite(ops.slice(i, i + 64) as never, { ordered: false });
      }
      writeMs += Date.now() - t;
    };
    let batch: Document[] = [];
    let t = Date.now();
    for await (const doc of users.find({}, { batchSize: BATCH })) {
      batch.push(doc);
      if (batch.length < BATCH) continue;
      readMs += Date.now() - t;
      await write(batch);
      batch = [];
      t = Date.now();
    }
    readMs += Date.now() - t;
    if (batch.length > 0) await write(batch);
    const left = shape === 'insert into a new collection' ? N - (await copy.countDocuments()) : await users.countDocuments({ h: { $exists: false } });
    const rate = (ms: number) => Math.round(N / (ms / 1000)).toLocaleString('en-US');
    return `| ${shape} | ${rate(writeMs)} | ${rate(readMs + writeMs)} | ${left} |`;
  } finally {
    await db.dropDatabase();
  }
}

(async () => {
  const client = new MongoClient(process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/');
  try {
    const rows = [];
    for (const shape of ['updateOne', 'replaceOne', 'insert into a new collection'] as const) rows.push(await row(client, shape));
    process.stdout.write(
      [
        `${N.toLocaleString('en-US')} users of the old shape, ${process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/'}`,
        '',
        '| write shape | users/s, writes | users/s, reads and writes | left in the old shape |',
        '|---|---:|---:|---:|',
        ...rows,
        '',
      ].join('\n'),
    );
  } finally {
    await client.close();
  }
})();
