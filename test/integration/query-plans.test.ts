// Issue 3: indexes for every query the API makes. The commands a list really sends are captured
// (driver command monitoring) and explained on the server the tests run against:
// - MongoDB: every one of them is served by an index (no COLLSCAN anywhere in the winning plans);
// - FerretDB v1 (SQLite), patched (scripts/ferretdb/), pushes down top-level equalities and $in
//   (`filterPushdown`) but no regular expression, range or sort; there the assertion is that the
//   per-record reads of a page are `_id` lookups, pushed down and served by the `_id` index.
import { MongoClient, type CommandStartedEvent, type Db, type Document } from 'mongodb';
import { COLLECTIONS, ensureIndexes, type GroupCourseDoc, type GroupDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { coursesRepository } from '../../src/features/courses/repository';
import { usersRepository } from '../../src/features/users/repository';
import { insertMembershipIfAbsent } from '../../src/domain/memberships';
import { seeder } from '../helpers/seed';
import { MONGO_URL, uniqueName } from '../helpers/stack';

let client: MongoClient;
let db: Db;
let ferret: boolean;
let group: number;
const commands: CommandStartedEvent[] = [];

beforeAll(async () => {
  client = new MongoClient(MONGO_URL, { monitorCommands: true });
  db = client.db(uniqueName('plans'));
  await ensureIndexes(db);
  ferret = typeof (await db.admin().command({ buildInfo: 1 })).ferretdbVersion === 'string';
  for (const org of ['org-a', 'org-b']) {
    const seed = seeder(db, org);
    const offset = org === 'org-a' ? 0 : 1000;
    for (let i = 1; i <= 60; i++) {
      await seed.user(offset + i);
      await seed.course(`course-v1:${org}+C${String(i).padStart(3, '0')}+1`);
    }
  }
  const tenant = new Tenant(db, 'org-a');
  group = await tenant.nextId('groups');
  await tenant.collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: String(group), id: group, name: 'G', description: '' });
  for (let i = 1; i <= 30; i++) {
    const course = `course-v1:org-a+C${String(i * 2).padStart(3, '0')}+1`;
    await tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).insertOne({ _id: `${course}|${group}`, id: i, course, group });
    await insertMembershipIfAbsent(tenant, { user: i, group, automatic: false });
  }
  client.on('commandStarted', (e) => commands.push(e));
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/** The commands `run` sends to the server. */
async function captured(run: () => Promise<unknown>): Promise<Document[]> {
  commands.length = 0;
  await run();
  return commands.filter((e) => ['find', 'aggregate', 'count'].includes(e.commandName)).map((e) => e.command);
}

const collectionOf = (command: Document): string => command.find ?? command.aggregate ?? command.count;

async function explain(command: Document): Promise<Document> {
  const { lsid: _l, $db: _d, $clusterTime: _c, $readPreference: _r, ...plain } = command;
  return db.command({ explain: plain, verbosity: 'queryPlanner' });
}

/** Every `stage` of every winning plan in an explain answer (find, or aggregate at any depth). */
function winningStages(node: unknown, inWinning = false, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => winningStages(n, inWinning, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'stage' && inWinning && typeof v === 'string') out.push(v);
      if (k === 'rejectedPlans') continue;
      winningStages(v, inWinning || k === 'winningPlan', out);
    }
  }
  return out;
}

async function expectIndexedOnMongo(sent: Document[]) {
  expect(sent.length).toBeGreaterThan(0);
  for (const command of sent) {
    const stages = winningStages(await explain(command));
    const where = `${collectionOf(command)} ${JSON.stringify(command.filter ?? command.pipeline ?? command.query)}`;
    expect({ where, stages }).toEqual({ where, stages: expect.not.arrayContaining(['COLLSCAN']) });
    expect({ where, indexed: stages.some((s) => /IXSCAN|IDHACK|COUNT_SCAN|DISTINCT_SCAN|EXPRESS/.test(s)) }).toEqual({ where, indexed: true });
  }
}

/** FerretDB: the filter went to SQLite, whose plan reads through an index and scans nothing. */
const servedByIndex = (e: Document): boolean =>
  e.filterPushdown === true && e.queryPlanner.Plan.some((l: string) => / USING INDEX /.test(l)) && !e.queryPlanner.Plan.some((l: string) => /detail=SCAN /.test(l));

/** The finds on `collection` that are exactly `{_id: <string>}`, each explained. */
async function keyLookups(sent: Document[], collection: string) {
  const finds = sent.filter((c) => c.find === collection);
  const lookups = finds.filter((c) => Object.keys(c.filter ?? {}).length === 1 && typeof c.filter._id === 'string');
  return { finds, lookups, explained: await Promise.all(lookups.map(explain)) };
}

test('courses?group=: the links by group, then the page read by key', async () => {
  const repo = coursesRepository(new Tenant(db, 'org-a'));
  let results: unknown[] = [];
  const sent = await captured(async () => {
    ({ results } = await repo.list({ limit: 10, offset: 5 }, { group: String(group) }));
  });
  expect(results).toHaveLength(10);
  if (!ferret) return expectIndexedOnMongo(sent);

  // FerretDB: each course of the page is one pushed-down `_id` lookup; no other find on courses.
  const { finds, lookups, explained } = await keyLookups(sent, COLLECTIONS.courses);
  expect(lookups).toHaveLength(10);
  expect(finds).toHaveLength(10);
  for (const e of explained) expect(servedByIndex(e)).toBe(true);
  // So are the public-record and group reads of the page.
  for (const name of [COLLECTIONS.publicCourses, COLLECTIONS.groups]) {
    const reads = await keyLookups(sent, name);
    expect(reads.lookups.length).toBeGreaterThan(0);
    expect(reads.finds).toHaveLength(reads.lookups.length);
    for (const e of reads.explained) expect(servedByIndex(e)).toBe(true);
  }
  // The same lookup scoped the obvious way ({_id, org}) is served by the index as well.
  const scoped = { ...lookups[0]!, filter: { ...lookups[0]!.filter, org: 'org-a' } };
  expect(servedByIndex(await explain(scoped))).toBe(true);
});

test('users?search=: the search by id order, then the memberships of the page by key', async () => {
  const repo = usersRepository(new Tenant(db, 'org-a'));
  let results: { membership: unknown }[] = [];
  const sent = await captured(async () => {
    ({ results } = await repo.list({ limit: 20, offset: 0 }, { search: 'user1, example' }));
  });
  expect(results.length).toBeGreaterThan(5);
  expect(results.filter((u) => u.membership !== null).length).toBeGreaterThan(0);
  if (!ferret) return expectIndexedOnMongo(sent);

  // FerretDB cannot push a regular expression down (its search reads the collection); what it
  // can do, and does, is key lookups for the memberships of the page.
  const { finds, lookups, explained } = await keyLookups(sent, COLLECTIONS.memberships);
  expect(lookups).toHaveLength(results.length);
  expect(finds).toHaveLength(lookups.length);
  for (const e of explained) expect(servedByIndex(e)).toBe(true);
});

test.each([
  ['users?email_exact=', COLLECTIONS.memberships, (t: Tenant) => usersRepository(t).list({ limit: 20, offset: 0 }, { email_exact: 'USER7@example.com' })],
  ['users?group=', COLLECTIONS.memberships, (t: Tenant) => usersRepository(t).list({ limit: 20, offset: 0 }, { group: String(group) })],
  ['users?no_group=true', COLLECTIONS.memberships, (t: Tenant) => usersRepository(t).list({ limit: 20, offset: 0 }, { no_group: 'true' })],
  ['courses?search=', COLLECTIONS.publicCourses, (t: Tenant) => coursesRepository(t).list({ limit: 20, offset: 0 }, { search: 'C01' })],
  ['courses?is_public=false&no_group=true', COLLECTIONS.publicCourses, (t: Tenant) => coursesRepository(t).list({ limit: 20, offset: 0 }, { is_public: 'false', no_group: 'true' })],
])('%s: indexed on MongoDB; on FerretDB the per-record reads of the page are pushed-down key lookups', async (_name, perRecord, run) => {
  const sent = await captured(() => run(new Tenant(db, 'org-a')));
  if (!ferret) return expectIndexedOnMongo(sent);
  const { finds, lookups, explained } = await keyLookups(sent, perRecord);
  expect(lookups.length).toBeGreaterThan(0);
  // (users?group= and ?no_group= also read the memberships by group: that one scan is expected.)
  expect(finds.length - lookups.length).toBeLessThanOrEqual(1);
  for (const e of explained) expect(servedByIndex(e)).toBe(true);
});
