/**
 * `npx tsx bench/ferretdb.ts`: the reads and writes the FerretDB patch (scripts/ferretdb/) is
 * about, timed against the server at MONGO_URL. Seeds FERRET_BENCH_DOCS documents of about 190
 * bytes into a scratch database, prints one Markdown table, and drops the database.
 * The list rows (patch 0004) seed another collection: FERRET_BENCH_ORG_DOCS documents of one
 * organization and a quarter as many of another, indexed {org, id} and {org, group, id}.
 */
import { randomBytes } from 'node:crypto';
import { BSON, MongoClient } from 'mongodb';

const url = process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/';
const total = Number(process.env.FERRET_BENCH_DOCS || 100_000);
const orgTotal = Number(process.env.FERRET_BENCH_ORG_DOCS || 100_000);
const orgs = 4;

/** A user-like document of about 190 bytes of BSON. */
const doc = (i: number) => ({
  _id: `user-${String(i).padStart(7, '0')}`,
  org: `org-${i % orgs}`,
  id: Math.floor(i / orgs),
  email: `learner.${i}@example.com`,
  name: `Learner Number ${i}`,
  active: i % 10 !== 0,
  joined: new Date(1_700_000_000_000 + i * 1000),
  note: 'x'.repeat(40),
});

/** Median milliseconds of `run` over at most `reps` runs or about 10 seconds, whichever ends first. */
async function time(run: (i: number) => Promise<unknown>, reps = 20): Promise<string> {
  const ms: number[] = [];
  const until = Date.now() + 10_000;
  for (let i = 0; i < reps && (i < 3 || Date.now() < until); i++) {
    const start = process.hrtime.bigint();
    await run(i);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return `${ms[Math.floor(ms.length / 2)]!.toFixed(1)} ms (median of ${ms.length})`;
}

async function main(): Promise<void> {
  const client = new MongoClient(url);
  const db = client.db(`bench_ferretdb_${randomBytes(3).toString('hex')}`);
  try {
    const ferret = (await db.admin().command({ buildInfo: 1 })).ferretdbVersion;
    const users = db.collection<ReturnType<typeof doc>>('users');
    await users.createIndex({ org: 1, id: 1 }, { unique: true });
    const seeded = Date.now();
    for (let i = 0; i < total; i += 1000) {
      await users.insertMany(
        Array.from({ length: Math.min(1000, total - i) }, (_, j) => doc(i + j)),
        { ordered: false },
      );
    }
    process.stderr.write(`seeded ${total} documents of ${BSON.calculateObjectSize(doc(total - 1))} bytes in ${((Date.now() - seeded) / 1000).toFixed(1)} s\n`);

    // Keys spread over the collection, different on every run.
    const key = (i: number) => (i * 7919 + 13) % total;
    const rows: [string, string][] = [
      ['findOne {_id}', await time((i) => users.findOne({ _id: doc(key(i))._id }))],
      ['findOne {org, id} (unique index)', await time((i) => users.findOne({ org: doc(key(i)).org, id: doc(key(i)).id }))],
      [
        'find {_id: {$in: [20 keys]}}',
        await time((i) => users.find({ _id: { $in: Array.from({ length: 20 }, (_, j) => doc(key(i * 20 + j))._id) } }).toArray()),
      ],
      ['updateOne {_id} $set', await time((i) => users.updateOne({ _id: doc(key(i))._id }, { $set: { note: randomBytes(20).toString('hex') } }))],
    ];

    // An admin list: a page of one organization's records by id, and the count beside it.
    const members = db.collection<{ _id: string; org: string; group: number; id: number }>('members');
    await members.createIndex({ org: 1, id: 1 }, { unique: true });
    await members.createIndex({ org: 1, group: 1, id: 1 });
    const seededOrg = Date.now();
    const orgDocs = (org: string, n: number) => Array.from({ length: n }, (_, i) => ({ _id: `${org}-${i}`, org, group: i % 10, id: i }));
    for (const [org, n] of [
      ['big', orgTotal],
      ['small', Math.ceil(orgTotal / 4)],
    ] as const) {
      const all = orgDocs(org, n);
      for (let i = 0; i < n; i += 1000) await members.insertMany(all.slice(i, i + 1000), { ordered: false });
    }
    process.stderr.write(`seeded ${orgTotal} + ${Math.ceil(orgTotal / 4)} list documents in ${((Date.now() - seededOrg) / 1000).toFixed(1)} s\n`);
    const deep = Math.max(0, orgTotal - 1000);
    const pageOf = (skip: number) => members.find({ org: 'big' }).sort({ id: 1 }).skip(skip).limit(20).toArray();
    const first = await pageOf(deep);
    if (first.length !== 20 || first[0]!.id !== deep) throw new Error(`page at ${deep} starts at ${first[0]?.id}`);
    rows.push(
      [`page of 20 of {org} (${orgTotal}) sorted by id, offset 0`, await time(() => pageOf(0))],
      [`page of 20 of {org} sorted by id, offset ${deep}`, await time(() => pageOf(deep))],
      [`count command {org, group} (${orgTotal / 10})`, await time((i) => db.command({ count: 'members', query: { org: 'big', group: i % 10 } }))],
      ['countDocuments {org, group}', await time((i) => members.countDocuments({ org: 'big', group: i % 10 }))],
    );

    const counters = db.collection<{ _id: string; n: number }>('counters');
    await counters.insertOne({ _id: 'inc', n: 0 });
    await Promise.all(Array.from({ length: 50 }, () => counters.updateOne({ _id: 'inc' }, { $inc: { n: 1 } })));
    rows.push(['50 concurrent $inc: final n', String((await counters.findOne({ _id: 'inc' }))?.n)]);
    const upserts = await Promise.allSettled(
      Array.from({ length: 50 }, () => counters.findOneAndUpdate({ _id: 'upsert' }, { $inc: { n: 1 } }, { upsert: true, returnDocument: 'after' })),
    );
    const values = upserts.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value.n] : []));
    const failed = upserts.filter((r) => r.status === 'rejected').length;
    rows.push(['50 concurrent upserting findOneAndUpdate', `${new Set(values).size} distinct values, ${failed} errors`]);

    process.stdout.write(`\n${ferret ? `FerretDB ${ferret}` : 'MongoDB'}, ${total} documents\n\n| operation | result |\n|---|---|\n`);
    for (const [name, result] of rows) process.stdout.write(`| ${name} | ${result} |\n`);
  } finally {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
