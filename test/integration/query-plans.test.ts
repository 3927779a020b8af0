// Issue 3: indexes for every query the API makes. The commands a list really sends are captured
// (driver command monitoring) and explained on the server the tests run against:
// - MongoDB: every one of them is served by an index (no COLLSCAN anywhere in the winning plans);
// - FerretDB with the project's patch (SQLite): every one is pushed down to SQL that SQLite
//   serves from an index (`SEARCH … USING INDEX` in the plan, never a `SCAN` of the table).
import { Long, MongoClient, type CommandStartedEvent, type Db, type Document } from 'mongodb';
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
  // FerretDB's explain wants 64-bit skip and limit, which the driver sends as 32-bit in the command.
  for (const field of ['skip', 'limit'] as const) if (typeof plain[field] === 'number') plain[field] = Long.fromNumber(plain[field]);
  return db.command({ explain: plain, verbosity: 'queryPlanner' });
}

/** Every `stage` of every winning plan in an explain answer (find, or aggregate at any depth). */
function winningStages(node: unknown, inWinning = false, out: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const n of node) winningStages(n, inWinning, out);
  }
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

/** The SQLite plan lines FerretDB reports for a command. */
async function sqlitePlan(command: Document): Promise<string[]> {
  const answer = await explain(command);
  expect({ command: collectionOf(command), filterPushdown: answer.filterPushdown }).toEqual({ command: collectionOf(command), filterPushdown: true });
  return (answer.queryPlanner?.Plan ?? []) as string[];
}

async function expectIndexedOnFerret(sent: Document[]) {
  expect(sent.length).toBeGreaterThan(0);
  for (const command of sent) {
    const plan = await sqlitePlan(command);
    const where = `${collectionOf(command)} ${JSON.stringify(command.filter ?? command.pipeline ?? command.query)}`;
    expect({ where, scans: plan.filter((line) => /detail=SCAN /.test(line)) }).toEqual({ where, scans: [] });
    expect({ where, indexed: plan.some((line) => /USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY/.test(line)) }).toEqual({ where, indexed: true });
  }
}

const expectIndexed = (sent: Document[]) => (ferret ? expectIndexedOnFerret(sent) : expectIndexedOnMongo(sent));

test('courses?group=: the links by group, then the page read by key', async () => {
  const repo = coursesRepository(new Tenant(db, 'org-a'));
  let results: unknown[] = [];
  const sent = await captured(async () => {
    ({ results } = await repo.list({ limit: 10, offset: 5 }, { group: String(group) }));
  });
  expect(results).toHaveLength(10);
  await expectIndexed(sent);
});

test('users?search=: the search by id order, then the memberships of the page by key', async () => {
  const repo = usersRepository(new Tenant(db, 'org-a'));
  let results: { membership: unknown }[] = [];
  const sent = await captured(async () => {
    ({ results } = await repo.list({ limit: 20, offset: 0 }, { search: 'user1, example' }));
  });
  expect(results.length).toBeGreaterThan(5);
  expect(results.filter((u) => u.membership !== null).length).toBeGreaterThan(0);
  await expectIndexed(sent);
});

test.each([
  ['users?email_exact=', (t: Tenant) => usersRepository(t).list({ limit: 20, offset: 0 }, { email_exact: 'USER7@example.com' })],
  ['users?group=', (t: Tenant) => usersRepository(t).list({ limit: 20, offset: 0 }, { group: String(group) })],
  ['users?no_group=true', (t: Tenant) => usersRepository(t).list({ limit: 20, offset: 0 }, { no_group: 'true' })],
  ['courses?search=', (t: Tenant) => coursesRepository(t).list({ limit: 20, offset: 0 }, { search: 'C01' })],
  ['courses?is_public=false&no_group=true', (t: Tenant) => coursesRepository(t).list({ limit: 20, offset: 0 }, { is_public: 'false', no_group: 'true' })],
])('%s: every command it sends is served by an index', async (_name, run) => {
  await expectIndexed(await captured(() => run(new Tenant(db, 'org-a'))));
});
