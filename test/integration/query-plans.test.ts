// Issues 3 and 12: every list, filter, search, deep page and count is served by an index. The
// commands a list really sends are captured (driver command monitoring) and explained on the
// server the tests run against:
// - FerretDB with the project's patches (SQLite): every one is pushed down to SQL that SQLite
//   serves from an index (`SEARCH … USING INDEX` in the plan, never a `SCAN` of the table);
// - MongoDB (only when MONGO_URL names a real one): every winning plan uses an index (no
//   COLLSCAN), and what the request examined (index keys, documents, summed over its commands,
//   from `executionStats`) stays within the bound the design gives, far below the organization's
//   size wherever the answer is small: that is what "index-served" means at 100,000 users.
// The organization is the bench's data set (bench/seed.ts: derived fields and search grams
// written with insertMany), at USERS users.
import { type CommandStartedEvent, type Db, type Document, Long, MongoClient } from 'mongodb';
import { MAIN_ORG, seedBenchData } from '../../bench/seed';
import { COLLECTIONS, ensureIndexes, type GroupCourseDoc, type MembershipDoc, type RuleDoc, type UserDoc } from '../../src/db/collections';
import { indexUser } from '../../src/db/search-index';
import { Tenant } from '../../src/db/tenant';
import { matchRules } from '../../src/domain/rule-match';
import { createFactsCache } from '../../src/features/access/cache';
import { accessQueries } from '../../src/features/access/queries';
import { courseQueries } from '../../src/features/courses/queries';
import { groupCourseQueries } from '../../src/features/group-courses/queries';
import { groupQueries } from '../../src/features/groups/queries';
import { ruleQueries } from '../../src/features/membership-rules/queries';
import { membershipQueries } from '../../src/features/memberships/queries';
import { publicCourseQueries } from '../../src/features/public-courses/queries';
import { userQueries } from '../../src/features/users/queries';
import { MONGO_URL, uniqueName } from '../helpers/stack';

const USERS = Number(process.env.PLAN_USERS ?? 1500);
const COURSES = 60;
const GROUPS = 10;

let client: MongoClient;
let db: Db;
let ferret: boolean;
const commands: CommandStartedEvent[] = [];
const tenant = () => new Tenant(db, MAIN_ORG);

beforeAll(async () => {
  client = new MongoClient(MONGO_URL, { monitorCommands: true });
  db = client.db(uniqueName('plans'));
  await ensureIndexes(db);
  ferret = typeof (await db.admin().command({ buildInfo: 1 })).ferretdbVersion === 'string';
  await seedBenchData(db, { users: USERS, courses: COURSES, groups: GROUPS });
  client.on('commandStarted', (e) => commands.push(e));
}, 300_000);
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/** The read commands `run` sends to the server. */
async function captured(run: () => Promise<unknown>): Promise<Document[]> {
  await run(); // once unrecorded: the count strategy is probed once per client (src/db/tenant.ts)
  commands.length = 0;
  await run();
  return commands.filter((e) => ['find', 'aggregate', 'count'].includes(e.commandName)).map((e) => e.command);
}

const collectionOf = (command: Document): string => command.find ?? command.aggregate ?? command.count;
const where = (command: Document) => `${collectionOf(command)} ${JSON.stringify(command.filter ?? command.pipeline ?? command.query)}`;

async function explain(command: Document, verbosity: 'queryPlanner' | 'executionStats'): Promise<Document> {
  const { lsid: _l, $db: _d, $clusterTime: _c, $readPreference: _r, ...plain } = command;
  // FerretDB's explain wants 64-bit skip and limit, which the driver sends as 32-bit in the command.
  for (const field of ['skip', 'limit'] as const) if (typeof plain[field] === 'number') plain[field] = Long.fromNumber(plain[field]);
  return db.command({ explain: plain, verbosity });
}

/** Every `stage` of every winning plan in an explain answer (find, count or aggregate, at any depth). */
function winningStages(node: unknown, inWinning = false, out: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const n of node) winningStages(n, inWinning, out);
  } else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'stage' && inWinning && typeof v === 'string') out.push(v);
      if (k === 'rejectedPlans' || k === 'allPlansExecution') continue;
      winningStages(v, inWinning || k === 'winningPlan' || k === 'queryPlan', out);
    }
  }
  return out;
}

/** The largest `name` of any executionStats in an explain answer (an aggregate nests one per cursor). */
function largest(node: unknown, name: 'totalKeysExamined' | 'totalDocsExamined'): number {
  if (Array.isArray(node)) return Math.max(0, ...node.map((n) => largest(n, name)));
  if (!node || typeof node !== 'object') return 0;
  return Math.max(0, ...Object.entries(node).map(([k, v]) => (k === name && typeof v === 'number' ? v : k === 'allPlansExecution' ? 0 : largest(v, name))));
}

interface Bound {
  /** Index keys the whole request may examine. */
  keys: number;
  /** Documents the whole request may examine. */
  docs: number;
}

async function expectIndexedOnMongo(sent: Document[], bound: Bound) {
  expect(sent.length).toBeGreaterThan(0);
  let keys = 0;
  let docs = 0;
  for (const command of sent) {
    const answer = await explain(command, 'executionStats');
    const stages = winningStages(answer);
    expect({ where: where(command), stages }).toEqual({ where: where(command), stages: expect.not.arrayContaining(['COLLSCAN']) });
    expect({ where: where(command), indexed: stages.some((s) => /IXSCAN|IDHACK|COUNT_SCAN|DISTINCT_SCAN|EXPRESS|EOF/.test(s)) }).toEqual({
      where: where(command),
      indexed: true,
    });
    keys += largest(answer, 'totalKeysExamined');
    docs += largest(answer, 'totalDocsExamined');
  }
  expect({ keys, docs }).toEqual({ keys: expect.any(Number), docs: expect.any(Number) });
  expect(keys).toBeLessThanOrEqual(bound.keys);
  expect(docs).toBeLessThanOrEqual(bound.docs);
}

async function expectIndexedOnFerret(sent: Document[]) {
  expect(sent.length).toBeGreaterThan(0);
  for (const command of sent) {
    const answer = await explain(command, 'queryPlanner');
    const plan = (answer.queryPlanner?.Plan ?? []) as string[];
    expect({ where: where(command), filterPushdown: answer.filterPushdown }).toEqual({ where: where(command), filterPushdown: true });
    expect({ where: where(command), scans: plan.filter((line) => /detail=SCAN (?!CONSTANT)/.test(line)) }).toEqual({ where: where(command), scans: [] });
    expect({ where: where(command), indexed: plan.some((line) => /USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY/.test(line)) }).toEqual({
      where: where(command),
      indexed: true,
    });
  }
}

const expectIndexed = (sent: Document[], bound: Bound) => (ferret ? expectIndexedOnFerret(sent) : expectIndexedOnMongo(sent, bound));

/** A page of users: the 20 users, their memberships and their groups (and a little slack). */
const PAGE_DOCS = 4 * 20;
/** A page of courses: the 20 courses, their public records, up to 3 links each (bench/seed.ts), their groups. */
const COURSE_PAGE_DOCS = 20 + 20 + 3 * 20 + GROUPS + 10;
/** Counting the whole organization's list reads its index keys (never documents). */
const ORG = USERS + 50;

const users =
  (q: Record<string, string>, page = { limit: 20, offset: 0 }) =>
  () =>
    userQueries(tenant()).list(page, q);
const courses =
  (q: Record<string, string>, page = { limit: 20, offset: 0 }) =>
  () =>
    courseQueries(tenant()).list(page, q);

// [name, request, bound on MongoDB, at least this many results]
const cases: [string, () => Promise<{ count: number; results: unknown[] }>, Bound, number][] = [
  ['users/', users({}), { keys: ORG + 100, docs: PAGE_DOCS }, 20],
  [
    'users/?offset=<near the end> (deep page: ids from the index, then 20 documents)',
    users({}, { limit: 20, offset: USERS - 100 }),
    { keys: 2 * ORG + 100, docs: PAGE_DOCS },
    20,
  ],
  ['users/?group=3', users({ group: '3' }), { keys: (3 * USERS) / GROUPS + 100, docs: PAGE_DOCS }, 20],
  ['users/?no_group=true', users({ no_group: 'true' }), { keys: 100, docs: PAGE_DOCS }, 0],
  ['users/?no_group=false', users({ no_group: 'false' }), { keys: ORG + 100, docs: PAGE_DOCS }, 20],
  [
    'users/?group=3&no_group=false&limit=5&offset=5',
    users({ group: '3', no_group: 'false' }, { limit: 5, offset: 5 }),
    { keys: (3 * USERS) / GROUPS + 100, docs: PAGE_DOCS },
    5,
  ],
  ['users/?email_exact=', users({ email_exact: 'PLACEHOLDER' }), { keys: 20, docs: 10 }, 1],
  // A term of one user: its rarest trigram is a few users' (the id's digits).
  ['users/?search=<a name and an id>', users({ search: 'PLACEHOLDER' }), { keys: 8 * 210 + 200, docs: 200 + PAGE_DOCS }, 1],
  ['users/?search=<3 letters nobody has>', users({ search: 'qzx' }), { keys: 10, docs: 0 }, 0],
  // One trigram every user has: count and page from the gram index alone.
  ['users/?search=exa (every user: count and page from the index)', users({ search: 'exa' }), { keys: 2 * ORG + 100, docs: PAGE_DOCS }, 20],
  ['users/?search=<2 terms>&group=3', users({ search: 'PLACEHOLDER2', group: '3' }), { keys: 8 * 210 + (3 * USERS) / GROUPS + 200, docs: 200 + PAGE_DOCS }, 0],
  ['courses/', courses({}), { keys: 3 * COURSES + 100, docs: COURSE_PAGE_DOCS }, 20],
  ['courses/?is_public=false', courses({ is_public: 'false' }), { keys: 3 * COURSES + 100, docs: COURSE_PAGE_DOCS }, 20],
  ['courses/?no_group=true&is_public=false', courses({ no_group: 'true', is_public: 'false' }), { keys: 3 * COURSES + 100, docs: COURSE_PAGE_DOCS }, 0],
  ['courses/?group=3', courses({ group: '3' }), { keys: 3 * COURSES + 100, docs: COURSE_PAGE_DOCS }, 1],
  ['courses/?search=c12&is_public=false', courses({ search: 'c12', is_public: 'false' }), { keys: 5 * COURSES + 100, docs: 2 * COURSES + COURSE_PAGE_DOCS }, 1],
  ['course-access-groups/', () => groupQueries(tenant()).list({ limit: 20, offset: 0 }), { keys: 2 * GROUPS + 100, docs: PAGE_DOCS }, 1],
  ['memberships/?offset=<deep>', () => membershipQueries(tenant()).list({ limit: 20, offset: USERS - 100 }), { keys: 2 * ORG + 100, docs: PAGE_DOCS }, 20],
  ['group-courses/', () => groupCourseQueries(tenant()).list({ limit: 20, offset: 0 }), { keys: 4 * COURSES + 100, docs: PAGE_DOCS }, 20],
  ['public-courses/', () => publicCourseQueries(tenant()).list({ limit: 20, offset: 0 }), { keys: COURSES + 100, docs: PAGE_DOCS }, 1],
  ['membership-rules/', () => ruleQueries(tenant()).list({ limit: 20, offset: 0 }), { keys: 100, docs: PAGE_DOCS }, 0],
];

test.each(cases)(
  '%s: every command it sends is served by an index',
  async (name, request, bound, atLeast) => {
    let run = request;
    if (name.includes('PLACEHOLDER') || /email_exact|<a name|<2 terms>/.test(name)) {
      // Terms and emails of real users of the seeded organization.
      const u = await db.collection('users').findOne({ org: MAIN_ORG, id: Math.floor(USERS / 2) + 7 });
      const [first] = String(u!.name).split(' ');
      if (name.startsWith('users/?email_exact')) run = users({ email_exact: String(u!.email).toUpperCase() });
      else if (name.includes('<a name and an id>')) run = users({ search: `${first} ${u!.id}` });
      else run = users({ search: `${first}, ${String(u!.id).slice(0, 3)}`, group: '3' });
    }
    let answer: { count: number; results: unknown[] } = { count: 0, results: [] };
    const sent = await captured(async () => {
      answer = await run();
    });
    expect(answer.results.length).toBeGreaterThanOrEqual(atLeast);
    expect(answer.count).toBeGreaterThanOrEqual(answer.results.length);
    await expectIndexed(sent, bound);
  },
  120_000,
);

// Every event about a user re-derives its search grams, reading the ones it has: by record
// (`{r, org}`), never the organization's. On the local stack that read is an OR of indexable
// alternatives (a field may be an array containing the value); each must use the record's index,
// or SQLite may serve one from an index led by org and read every gram of the organization.
test("a user event's read of the user's own grams uses the record index, not the organization's", async () => {
  const user = await db.collection<UserDoc>('users').findOne({ org: MAIN_ORG, id: Math.floor(USERS / 3) });
  expect(user).not.toBeNull();
  const sent = (await captured(() => indexUser(tenant(), user!))).filter((c) => collectionOf(c) === 'user_grams');
  expect(sent.map(where)).toEqual([`user_grams ${JSON.stringify({ r: user!.id, org: MAIN_ORG })}`]);
  if (!ferret) return expectIndexedOnMongo(sent, { keys: 100, docs: 100 });
  const plan = ((await explain(sent[0]!, 'queryPlanner')).queryPlanner?.Plan ?? []) as string[];
  const searches = plan.filter((line) => /detail=SEARCH/.test(line));
  expect(searches.length).toBeGreaterThan(0);
  expect(searches.filter((line) => !/USING (COVERING )?INDEX \S+_r_1_org_1 /.test(line))).toEqual([]);
}, 60_000);

// The reads of the event path and of decisions that name a record by its fields, not its `_id`:
// a learner's rule by the email's domain, and a decision's link by group and course (the cache
// off, or an organization past its link table's bound).
test('rule matching and an uncached access decision: every command it sends is served by an index', async () => {
  const t = tenant();
  await t.collection<RuleDoc>(COLLECTIONS.rules).insertOne({ _id: '990001', id: 990_001, name: 'plans', domain: 'plans.example', group: 1 });
  let matched: number[] = [];
  const byRule = await captured(async () => {
    matched = (
      await matchRules(t, [
        { id: 1, email: 'one@Plans.example' },
        { id: 2, email: 'two@other.example' },
      ])
    ).map((m) => m.user.id);
  });
  expect(matched).toEqual([1]);
  await expectIndexed(byRule, { keys: 10, docs: 5 });
  if (ferret) {
    // Through the domain's index: the {org, id} index would serve it too, reading every rule of the organization.
    const plan = ((await explain(byRule[0]!, 'queryPlanner')).queryPlanner?.Plan ?? []) as string[];
    expect(plan.filter((line) => /detail=SEARCH/.test(line) && !/INDEX \S*domain\S* /.test(line))).toEqual([]);
  }

  const link = await t.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).findOne({});
  const member = await t.collection<MembershipDoc>(COLLECTIONS.memberships).findOne({ group: link!.group });
  const decisions = accessQueries(db, createFactsCache(db, { enabled: false }));
  let linked = false;
  const decision = await captured(async () => {
    linked = (await decisions.facts([link!.course], member!.user, () => true)).get(link!.course)!.memberOfLinkedGroup;
  });
  expect({ linked, reads: decision.map(collectionOf) }).toEqual({ linked: true, reads: expect.arrayContaining([COLLECTIONS.groupCourses]) });
  await expectIndexed(decision, { keys: 20, docs: 10 });
}, 60_000);
