// The FerretDB patch (scripts/ferretdb/) on the server the tests run against: equality and `$in`
// reads are served by indexes, a field holding an array still matches, numbers match whatever
// their BSON type, and update/findAndModify are atomic. Against a real MongoDB the same reads must
// be IXSCANs and the same behaviour holds, so every test runs on both.
import { type Collection, type Db, type Document, Double, Int32, Long, MongoClient } from 'mongodb';
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

// Patch 0007: a delete checks its filter as it deletes. Each document is moved off the filter's
// value while a deleteMany of that value runs: one moved first (its update matched) is no longer
// the delete's, and stands; one deleted first is gone for its update too (matched 0).
test('a deleteMany racing updates that move documents off its filter deletes none of those moved first', async () => {
  const moving = db.collection<{ _id: string; v: number }>('moving');
  const ids = Array.from({ length: 300 }, (_, i) => `m${i}`);
  const counts: number[] = [];
  for (let round = 0; round < 5; round++) {
    await moving.deleteMany({});
    await moving.insertMany(ids.map((_id) => ({ _id, v: 0 })));
    const update = async (_id: string) => ((await moving.updateOne({ _id, v: 0 }, { $set: { v: 1 } })).matchedCount === 1 ? [_id] : []);
    // The delete sent amid the updates, so that some reach the server before it and some after.
    const first = ids.slice(0, 150).map(update);
    const deleted = moving.deleteMany({ v: 0 });
    const rest = ids.slice(150).map(update);
    const moved = (await Promise.all([...first, ...rest, deleted])).slice(0, ids.length).flat() as string[];
    counts.push(moved.length);
    const standing = (await moving.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
    expect(standing.sort()).toEqual(moved.sort());
  }
  // The race ran: some round had documents moved before the delete reached them and others deleted first.
  expect(counts.some((n) => n > 0 && n < ids.length)).toBe(true);
});

// Patch 0004: a sorted page (sort, skip, limit) and a count are answered by SQLite from an index
// when that gives MongoDB's answer; otherwise FerretDB sorts, skips, limits and counts in Go.
describe('sorted pages and counts', () => {
  interface Row {
    _id: string;
    org: string | string[];
    group?: number;
    id?: unknown;
  }
  let pages: Collection<Row>;
  const rows: Row[] = [];
  const ids: unknown[] = [
    ...Array.from({ length: 40 }, (_, i) => i), // 0…39 as int32: numerically, 10 is after 9
    ...Array.from({ length: 10 }, (_, i) => new Double(i + 0.5)),
    new Double(3),
    Long.fromNumber(3),
    new Double(-2.5),
    -1, // ties with int32 3; negatives
    null,
    undefined,
    undefined, // null and missing sort together, first
    '10',
    '9',
    'b', // strings after numbers, in byte order
  ];

  beforeAll(async () => {
    pages = db.collection<Row>('pages');
    await pages.createIndex({ org: 1, id: 1 }, { name: 'org_1_id_1' });
    await pages.createIndex({ org: 1, group: 1, id: 1 }, { name: 'org_1_group_1_id_1' });
    ids.forEach((id, i) => {
      for (const org of ['o', 'p']) rows.push({ _id: `${org}${i}`, org, group: i % 3, ...(id === undefined ? {} : { id }) });
    });
    await pages.insertMany(rows);
  });

  /** MongoDB's sort order of the values above (null and missing equal), ascending. */
  const rank = (v: unknown) => (v === null || v === undefined ? 0 : typeof v === 'string' ? 2 : 1);
  const num = (v: unknown) => (v instanceof Long ? v.toNumber() : Number(v instanceof Double ? v.value : v));
  const compare = (a: unknown, b: unknown) => rank(a) - rank(b) || (rank(a) === 1 ? num(a) - num(b) : rank(a) === 2 ? (a! < b! ? -1 : a! > b! ? 1 : 0) : 0);
  /** A sort value as the test compares it: ties (3, 3.0, Long 3; null and missing) look the same. */
  const norm = (v: unknown) => (Array.isArray(v) ? v : rank(v) === 0 ? null : rank(v) === 1 ? num(v) : v);
  const matches = (row: Row, filter: Document) => Object.entries(filter).every(([k, v]) => [(row as Document)[k]].flat().includes(v));
  /** A page's sort values, and its `_id`s, as the server answers. */
  const page = async (filter: Document, dir: 1 | -1, skip: number, limit: number) =>
    (await pages.find(filter).sort({ id: dir }).skip(skip).limit(limit).toArray()).map((r) => ({ _id: r._id, id: norm(r.id) }));

  test.each([
    ['{org}', { org: 'o' }, 'org_1_id_1'],
    ['{org, group}', { org: 'o', group: 1 }, 'org_1_group_1_id_1'],
  ])('a page of %s sorted by id is read in index order (no sort step), the page in SQL', async (_name, filter, index) => {
    // FerretDB's explain wants 64-bit skip and limit (the driver's cursor sends them as 32-bit)
    const find = { find: 'pages', filter, sort: { id: 1 }, skip: Long.fromNumber(5), limit: Long.fromNumber(10) };
    const explained = await db.command({ explain: find, verbosity: 'queryPlanner' });
    if (!ferret) {
      const plan = JSON.stringify(explained.queryPlanner.winningPlan);
      expect(plan).not.toMatch(/"stage":"SORT"/);
      return expect(plan).toContain(`"indexName":"${index}"`);
    }
    const lines: string[] = explained.queryPlanner.Plan;
    expect(lines.join('\n')).not.toMatch(/TEMP B-TREE/);
    expect(lines.some((l) => new RegExp(`SEARCH \\S+ USING INDEX \\S+_${index} \\(<expr>=\\?`).test(l))).toBe(true);
    expect([explained.filterPushdown, explained.sortPushdown, explained.limitPushdown]).toEqual([true, true, true]);
  });

  /** Every page of `filter` both ways, checked against an in-memory sort; the pages together are every match once. */
  async function expectPages(filter: Document) {
    const expected = rows.filter((r) => matches(r, filter));
    for (const dir of [1, -1] as const) {
      // an array sorts by its least element ascending, by its greatest descending
      const key = (v: unknown) => (Array.isArray(v) ? [...v].sort((a, b) => dir * compare(a, b))[0] : v);
      const sorted = [...expected].sort((a, b) => dir * compare(key(a.id), key(b.id))).map((r) => norm(r.id));
      const seen: string[] = [];
      for (let skip = 0; skip < expected.length + 7; skip += 7) {
        const got = await page(filter, dir, skip, 7);
        expect({ dir, skip, ids: got.map((r) => r.id) }).toEqual({ dir, skip, ids: sorted.slice(skip, skip + 7) });
        seen.push(...got.map((r) => r._id));
      }
      expect(seen.sort()).toEqual(expected.map((r) => r._id).sort());
    }
    const count = await db.command({ count: 'pages', query: filter });
    expect(count.n).toBe(expected.length);
    expect((await db.command({ count: 'pages', query: filter, skip: 3, limit: 5 })).n).toBe(Math.min(5, Math.max(0, expected.length - 3)));
    expect(await pages.countDocuments(filter)).toBe(expected.length);
  }

  test('pages follow MongoDB order (ties, int/long/double, null and missing, strings); counts are right', async () => {
    await expectPages({ org: 'o' });
    await expectPages({ org: 'o', group: 1 });
    await expectPages({ org: 'nobody' });
  });

  test('the count command is answered from the index', async () => {
    const explained = await db.command({ explain: { count: 'pages', query: { org: 'o', group: 1 } }, verbosity: 'queryPlanner' });
    if (!ferret) return expect(JSON.stringify(explained.queryPlanner.winningPlan)).toMatch(/COUNT_SCAN|IXSCAN/);
    const lines: string[] = explained.queryPlanner.Plan;
    expect(lines.some((l) => /USING (COVERING )?INDEX \S+_org_1_group_1_id_1 \(<expr>=\? AND <expr>=\?\)/.test(l))).toBe(true);
  });

  test('an array-valued filter field (a superset in SQL) still gives the right pages and counts', async () => {
    const extra: Row[] = [
      { _id: 'a1', org: ['x', 'o'], group: 1, id: 7 },
      { _id: 'a2', org: ['x', 'y'], group: 1, id: 8 },
    ];
    await pages.insertMany(extra);
    rows.push(...extra);
    await expectPages({ org: 'o' });
    await expectPages({ org: 'o', group: 1 });
    if (ferret) {
      // SQLite still sorts, but the page is cut in Go, after the filter
      const find = { find: 'pages', filter: { org: 'o' }, sort: { id: 1 }, skip: Long.fromNumber(5), limit: Long.fromNumber(10) };
      const explained = await db.command({ explain: find, verbosity: 'queryPlanner' });
      expect([explained.sortPushdown, explained.limitPushdown]).toEqual([true, false]);
    }
    // an array as a sort value: MongoDB's order is not SQLite's, so FerretDB sorts in Go
    const array: Row = { _id: 'a3', org: 'o', group: 1, id: [50, 5] };
    await pages.insertOne(array);
    rows.push(array);
    await expectPages({ org: 'o', group: 1 });
    extra.push(array);
    await pages.deleteMany({ _id: { $in: extra.map((r) => r._id) } });
    rows.splice(-extra.length);
  });
});
