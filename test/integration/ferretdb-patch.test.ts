// The FerretDB patch (scripts/ferretdb/) on the server the tests run against: equality and `$in`
// reads are served by indexes, a field holding an array still matches, numbers match whatever
// their BSON type, and update/findAndModify are atomic. Against a real MongoDB the same reads must
// be IXSCANs and the same behaviour holds, so every test runs on both.
import { Double, Int32, Long, MongoClient, type Collection, type Db, type Document } from 'mongodb';
import { MONGO_URL, uniqueName } from '../helpers/stack';

interface Doc {
  _id: string;
  org: string | string[];
  id: number | Double | Long | Int32 | number[];
  n?: number;
}

let client: MongoClient;
let db: Db;
let docs: Collection<Doc>;
let ferret: boolean;

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  db = client.db(uniqueName('ferretpatch'));
  ferret = typeof (await db.admin().command({ buildInfo: 1 })).ferretdbVersion === 'string';
  docs = db.collection<Doc>('docs');
  await docs.createIndex({ org: 1, id: 1 }, { name: 'org_1_id_1' });
  // Enough rows that MongoDB's planner prefers an index to a collection scan.
  await docs.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: `k${i}`, org: `o${i % 3}`, id: i })));
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/** What the server's plan for `filter` on `docs` says: the index names it uses and whether it scans. */
async function plan(filter: Document): Promise<{ indexes: string[]; scans: boolean; pushdown?: boolean }> {
  const explained: Document = await docs.find(filter).explain('queryPlanner');
  if (ferret) {
    // FerretDB returns SQLite's EXPLAIN QUERY PLAN lines, e.g.
    // "id=3 parent=0 notused=0 detail=SEARCH <table> USING INDEX <table>__id_ (<expr>=?)".
    const lines: string[] = explained.queryPlanner.Plan;
    const indexes = lines.flatMap((l) => [...l.matchAll(/USING INDEX \S+?_((?:_id_|org_1_id_1)) \((.*)\)/g)].map((m) => `${m[1]} ${m[2]}`));
    return { indexes, scans: lines.some((l) => /detail=SCAN /.test(l)), pushdown: explained.filterPushdown };
  }
  const stages: Document[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const n = node as Document;
      if (typeof n.stage === 'string') stages.push(n);
      for (const [k, v] of Object.entries(n)) if (k !== 'rejectedPlans') walk(v);
    }
  };
  walk(explained.queryPlanner.winningPlan);
  return {
    indexes: stages.filter((s) => /IXSCAN|IDHACK|EXPRESS/.test(s.stage)).map((s) => s.indexName ?? '_id_'),
    scans: stages.some((s) => s.stage === 'COLLSCAN'),
  };
}

const twentyKeys = Array.from({ length: 20 }, (_, i) => `k${i * 7}`);

test.each([
  ['{_id}', '_id_', { _id: 'k7' }, ['k7']],
  ['{org, id}', 'org_1_id_1', { org: 'o1', id: 7 }, ['k7']],
  ['{_id: {$in: [20 keys]}}', '_id_', { _id: { $in: twentyKeys } }, twentyKeys],
])('%s is read through index %s, not a scan', async (_name, index, filter, ids) => {
  const found = await docs.find(filter as Document).toArray();
  expect(found.map((d) => d._id).sort()).toEqual([...ids].sort());
  const p = await plan(filter);
  expect(p.scans).toBe(false);
  if (!ferret) return expect(p.indexes).toContain(index);
  expect(p.pushdown).toBe(true);
  // Every key of the filter is an equality on the index (`<expr>=?` once per indexed field).
  const keys = index === '_id_' ? '<expr>=?' : '<expr>=? AND <expr>=?';
  expect(p.indexes).toContain(`${index} ${keys}`);
});

test('a field holding an array still matches equality on one of its values', async () => {
  await docs.insertOne({ _id: 'arr', org: ['o9', 'o1'], id: [1001, 1002] });
  expect((await docs.find({ org: 'o9', id: 1002 }).toArray()).map((d) => d._id)).toEqual(['arr']);
  expect((await docs.find({ org: 'o1', id: 1001 }).toArray()).map((d) => d._id)).toEqual(['arr']);
  expect((await docs.find({ id: { $in: [1002, 5000] } }).toArray()).map((d) => d._id)).toEqual(['arr']);
  if (ferret) expect((await plan({ org: 'o9', id: 1002 })).scans).toBe(false);
  await docs.deleteOne({ _id: 'arr' });
});

test('a number matches an equal int32, int64 or double, and 0 matches -0', async () => {
  await docs.insertMany([
    { _id: 'int32', org: 'num', id: new Int32(5) },
    { _id: 'int64', org: 'num', id: Long.fromNumber(5) },
    { _id: 'double', org: 'num', id: new Double(5) },
    { _id: 'other', org: 'num', id: new Double(5.5) },
    { _id: 'zero', org: 'num', id: new Double(-0) },
  ]);
  const ids = async (filter: Document) => (await docs.find(filter).toArray()).map((d) => d._id).sort();
  for (const five of [new Int32(5), Long.fromNumber(5), new Double(5)]) {
    expect(await ids({ org: 'num', id: five })).toEqual(['double', 'int32', 'int64']);
  }
  expect(await ids({ org: 'num', id: 5.5 })).toEqual(['other']);
  expect(await ids({ org: 'num', id: 0 })).toEqual(['zero']);
  await docs.deleteMany({ org: 'num' });
});

test('50 concurrent $inc on one document all count', async () => {
  const counters = db.collection<{ _id: string; n: number }>('counters');
  await counters.insertOne({ _id: 'inc', n: 0 });
  await Promise.all(Array.from({ length: 50 }, () => counters.updateOne({ _id: 'inc' }, { $inc: { n: 1 } })));
  expect(await counters.findOne({ _id: 'inc' })).toEqual({ _id: 'inc', n: 50 });
});

test('50 concurrent findOneAndUpdate upserts of one new document return 50 distinct values', async () => {
  const counters = db.collection<{ _id: string; n: number }>('counters');
  const results = await Promise.all(
    Array.from({ length: 50 }, () => counters.findOneAndUpdate({ _id: 'upsert' }, { $inc: { n: 1 } }, { upsert: true, returnDocument: 'after' })),
  );
  expect(results.map((r) => r?.n).sort((a, b) => a! - b!)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  expect(await counters.countDocuments({ _id: 'upsert' })).toBe(1);
});
