// Issue 11: `cag import` registers new users in batches (importUserBatch) and leaves every other
// line to the per-event path. Proved against the real server by comparison: the same lines,
// applied one by one as events in a second database, leave the same users, memberships and
// tombstones, and the same applied / unchanged counts.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { type Db, MongoClient } from 'mongodb';
import { registrationCompleted } from '../../consumers/handlers/registration-completed';
import { IMPORT_TIME, type ImportSummary, importFiles } from '../../src/cli/import';
import { COLLECTIONS, ensureIndexes, type OutboxDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { learnerRecords } from '../../src/db/user-records';
import { normalizeEventTime } from '../../src/domain/event-time';
import { createGroup } from '../../src/domain/groups';
import { importUserBatch, linesAt } from '../../src/domain/import-users';
import { retireUser } from '../../src/domain/learners';
import { applyRule, createRule } from '../../src/domain/membership-rules';

import { applyUserData, type UserEventData, userFacts } from '../../src/domain/user-event-data';
import { giveMembership } from '../helpers/domain';
import { seeder } from '../helpers/seed';
import { MONGO_URL, uniqueName } from '../helpers/stack';

const LATER = normalizeEventTime('2024-01-01T00:00:00Z');
/**
 * Sizes: each only as large as the boundary it must cross (a $in of 1000 ids, a chunk of the
 * import, a page of 500 of applyRule); past the boundary, more learners repeat the same
 * statements and prove nothing more (each learner costs about 20 writes on FerretDB).
 */
const BEYOND_ONE_IN = 1010;
const EVEN_LATER = normalizeEventTime('2025-01-01T00:00:00Z');

let client: MongoClient;
let dir: string;
const databases: Db[] = [];

beforeAll(async () => {
  client = new MongoClient(MONGO_URL);
  dir = await mkdtemp(join(tmpdir(), 'cag-import-batch-'));
});
afterAll(async () => {
  for (const db of databases) await db.dropDatabase().catch(() => undefined);
  await client.close();
  await rm(dir, { recursive: true, force: true });
});

const line = (id: number, email: string, opts: { org?: string; active?: boolean; staff?: boolean } = {}) =>
  JSON.stringify({
    user: {
      id,
      is_active: opts.active ?? true,
      pii: { username: `u${id}`, email, name: `User ${id}` },
      ...(opts.staff ? { is_staff: true, is_site_admin: true } : {}),
    },
    organization: opts.org ?? 'org-a',
  });

/**
 * A database with what every case needs: in org-a and org-b a rule for partner.org, users that
 * exist (org-a at a later time, at the import's own time, org-b), a tombstone, members.
 */
async function world(): Promise<Db> {
  const db = client.db(uniqueName('batch'));
  databases.push(db);
  await ensureIndexes(db);
  for (const org of ['org-a', 'org-b']) {
    const tenant = new Tenant(db, org);
    const partners = await createGroup(tenant, { name: 'Partners', description: '' });
    await createGroup(tenant, { name: 'Staff', description: '' });
    await createRule(tenant, { name: 'p', domain: 'partner.org', group: partners.id });
  }
  const a = seeder(db, 'org-a');
  const tenantA = a.tenant;
  const staff = 2; // the second group created: org-a's Staff
  await a.user(101, { email: 'u101@partner.org', event_time: LATER }); // exists, no membership: rules still apply
  await a.user(102, { email: 'u102@partner.org', event_time: LATER }); // exists, already a member of Staff
  await giveMembership(tenantA, { user: 102, group: staff, automatic: false });
  await seeder(db, 'org-b').user(103, { email: 'u103@partner.org', event_time: LATER }); // another organization's user
  await retireUser(db, 104, LATER); // retired after the import's time
  expect(await giveMembership(tenantA, { user: 105, group: staff, automatic: false })).toBeNull(); // not a learner: a membership is always a learner's
  await a.user(106, { email: 'u106@partner.org', event_time: IMPORT_TIME }); // imported before: a duplicate, which applies no rules
  await retireUser(db, 107, IMPORT_TIME); // retired at the import's time (older than EVEN_LATER)
  return db;
}

const LINES = [
  line(1, 'one@Partner.ORG'), // new, active, matching: joins Partners
  line(2, 'two@elsewhere.org'), // new, no rule
  line(3, 'three@partner.org', { active: false }), // new, inactive: no membership
  line(101, 'u101@partner.org'),
  line(102, 'u102@partner.org'),
  line(103, 'u103@partner.org'), // org-a line for org-b's user
  line(104, 'u104@partner.org'), // tombstoned
  line(105, 'u105@partner.org'), // already a member: keeps Staff
  line(106, 'u106@partner.org'),
  line(7, 'seven@partner.org', { org: 'org-b' }), // new in org-b: joins org-b's Partners
  line(8, 'eight@partner.org'), // the same id twice: the first line wins
  line(8, 'eight@elsewhere.org'),
  line(9, 'nine@partner.org', { staff: true }), // flags are kept
  line(10, 'ten@partner.org'), // the same id in two organizations in one chunk
  line(10, 'ten@partner.org', { org: 'org-b' }),
  line(11, 'weird@x@partner.org'), // the last `@` decides
  line(107, 'u107@partner.org'),
];

const parse = (text: string) => registrationCompleted.parse(JSON.parse(text)).data as UserEventData;

/** Applies each line as a registration event, one after the other; counts as the import does. */
async function applyOneByOne(db: Db, lines: string[], time: string): Promise<ImportSummary> {
  const counts: ImportSummary = { read: lines.length, applied: 0, unchanged: 0, refused: 0 };
  for (const text of lines) {
    const data = parse(text);
    const outcome = await applyUserData(db, data, time, 'registration', data.organization!);
    if (outcome === 'applied') counts.applied++;
    else counts.unchanged++;
  }
  return counts;
}

/** A history with its administrators' changes named alike: each has a fresh random identity. */
function withoutChangeIds(h: { entries: { source: string; id: string }[]; floor: { ids: string[] } | null } | undefined) {
  if (!h) return h;
  const named = <E extends { source: string; id: string }>(e: E) => (e.source === 'cag' ? { ...e, id: 'change' } : e);
  return { ...h, entries: h.entries.map(named), floor: h.floor && { ...h.floor, ids: h.floor.ids.map((i) => (i.startsWith('["cag",') ? 'change' : i)) } };
}

/**
 * What the stores hold, without what may legitimately differ: the integer ids of memberships
 * (claim order), how many writes a learner's record went through (`rev`, `projected`: the batch
 * writes a new learner whole) and the projection's bookkeeping (`writing`, `batch`, `facts_v`):
 * each record's projection is complete (`settled`) and no projection is left under way.
 */
async function state(db: Db) {
  const all = (name: string) => db.collection(name).find({}).sort({ org: 1, _id: 1 }).toArray();
  const memberships = await all(COLLECTIONS.memberships);
  return {
    underWay: await db.collection(COLLECTIONS.projectionIntents).countDocuments(),
    users: (await all(COLLECTIONS.users)).map(({ rev, projected, h, writing, batch: _batch, facts_v: _v, ...u }) => ({
      ...u,
      h: withoutChangeIds(h),
      settled: projected === rev && !writing?.length,
    })),
    memberships: memberships.map(({ id: _id, ...m }) => m),
    changes: await changeIntents(db),
  };
}

/** The change events the relay will publish: each record an outbox intent names, with its collection, organization and cause. */
async function changeIntents(db: Db): Promise<string[]> {
  const intents = await db.collection<OutboxDoc>(COLLECTIONS.outbox).find({}).toArray();
  return [...new Set(intents.flatMap((i) => i.k.map((k) => `${i.c}|${i.o}|${k}|${i.cause}`)))].sort();
}

async function membershipIdsAreUnique(db: Db) {
  const docs = await db.collection(COLLECTIONS.memberships).find({}).toArray();
  for (const org of ['org-a', 'org-b']) {
    const ids = docs.filter((m) => m.org === org).map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
  }
}

test.each([3, 2000])('the import in chunks of %i leaves what applying each line as an event leaves', async (chunkSize) => {
  const oneByOne = await world();
  const expectedCounts = await applyOneByOne(oneByOne, LINES, IMPORT_TIME);

  const batched = await world();
  const path = join(dir, `users-${chunkSize}.jsonl`);
  await writeFile(path, `${LINES.join('\n')}\n`);
  const summary = await importFiles(batched, { users: path, chunkSize, concurrency: 4, out: new PassThrough() });

  expect(summary).toEqual(expectedCounts);
  expect(await state(batched)).toEqual(await state(oneByOne));
  await membershipIdsAreUnique(batched);
  // The comparison is not vacuous: the batch made memberships and left the existing ones alone.
  const members = await batched
    .collection(COLLECTIONS.memberships)
    .find({}, { projection: { _id: 0, org: 1, user: 1, automatic: 1 } })
    .sort({ org: 1, user: 1 })
    .toArray();
  expect(members.map((m) => `${m.org}:${m.user}:${m.automatic}`)).toEqual([
    // 106's line is a duplicate: rules apply once per activation, not again on a redelivery.
    // 105 could be given no membership before it was a learner: its line's rule gives it one.
    ...['1:true', '8:true', '9:true', '10:true', '11:true', '101:true', '102:false', '105:true'].map((m) => `org-a:${m}`),
    // 103's org-a line is older than its org-b record: a move in the past, which claims no activation in org-b.
    ...['7:true'].map((m) => `org-b:${m}`),
  ]);
  expect(summary).toEqual({ read: 17, applied: 9, unchanged: 8, refused: 0 });
});

/** The import's composition at any time: the batch, then what it leaves, one by one in order. */
async function applyInBatches(db: Db, lines: string[], time: string): Promise<ImportSummary> {
  const counts: ImportSummary = { read: lines.length, applied: 0, unchanged: 0, refused: 0 };
  const count = (outcome: string) => (outcome === 'applied' ? counts.applied++ : counts.unchanged++);
  const datas = lines.map(parse);
  const perEvent: UserEventData[] = [];
  for (const org of new Set(datas.map((d) => d.organization))) {
    const ofOrg = datas.filter((d) => d.organization === org);
    const outcomes = await importUserBatch(
      new Tenant(db, org!),
      linesAt(
        ofOrg.map((d) => userFacts(d, 'registration')),
        time,
      ),
    );
    outcomes.forEach((outcome, i) => {
      if (outcome === 'per-event') perEvent.push(ofOrg[i]!);
      else count(outcome);
    });
  }
  for (const data of perEvent) count(await applyUserData(db, data, time, 'registration', data.organization!));
  return counts;
}

test('at a time newer than the stored users, the batch leaves moves and updates to the per-event path with the same result', async () => {
  // At EVEN_LATER, 101/102 are updated, 103 moves from org-b to org-a, 104 stays retired, 107's older tombstone lets it in.
  const lines = [...LINES, line(103, 'u103@partner.org', { org: 'org-b' })];
  const oneByOne = await world();
  const expectedCounts = await applyOneByOne(oneByOne, lines, EVEN_LATER);
  const batched = await world();
  const counts = await applyInBatches(batched, lines, EVEN_LATER);
  expect(counts).toEqual(expectedCounts);
  expect(await state(batched)).toEqual(await state(oneByOne));
  const users = batched.collection<{ _id: string }>(COLLECTIONS.users);
  expect(await users.findOne({ _id: '101' })).toMatchObject({ event_time: EVEN_LATER });
  expect(await users.findOne({ _id: '103' })).toMatchObject({ org: 'org-a' });
  expect(await users.findOne({ _id: '107' })).toMatchObject({ org: 'org-a' });
});

test('a user retired while the batch inserts keeps neither record nor membership', async () => {
  const db = await world();
  const tenant = new Tenant(db, 'org-a');
  const ids = Array.from({ length: 120 }, (_, i) => 5000 + i);
  const datas = ids.map((id) => parse(line(id, `r${id}@partner.org`)));
  const outcomes = importUserBatch(
    tenant,
    linesAt(
      datas.map((d) => userFacts(d, 'registration')),
      IMPORT_TIME,
    ),
  );
  // Retirements (newer than the import), 16 at once, land before, during and after the batch's steps.
  let next = 0;
  const retire = async () => {
    while (next < ids.length) await retireUser(db, ids[next++]!, LATER);
  };
  await Promise.all(Array.from({ length: 16 }, retire));
  const done = await outcomes;
  const leftPerEvent = done.flatMap((o, i) => (o === 'per-event' ? [datas[i]!] : []));
  for (const data of leftPerEvent) await applyUserData(db, data, IMPORT_TIME, 'registration', data.organization!);
  const idStrings = ids.map(String);
  const users = db.collection<{ _id: string; org: string | null }>(COLLECTIONS.users);
  expect(await users.countDocuments({ _id: { $in: idStrings }, org: { $ne: null } })).toBe(0);
  expect(await db.collection<{ _id: string }>(COLLECTIONS.memberships).countDocuments({ _id: { $in: idStrings } })).toBe(0);
  // Each retired: a record in no organization, which no older or redelivered event brings back.
  expect(await users.countDocuments({ _id: { $in: idStrings }, org: null })).toBe(120);
}, 120_000); // also writes each user's search grams (about 20 documents a user)

test('a chunk of more than 1000 users of one organization is looked up whole (the $in goes 1000 at a time)', async () => {
  const db = await world();
  const tenant = new Tenant(db, 'org-a');
  // 1,010: a second $in of 10 is as much a second $in as one of 500 (1,100 took 21 s alone, over 120 s in a CI run).
  const facts = Array.from({ length: BEYOND_ONE_IN }, (_, i) => userFacts(parse(line(20000 + i, `m${i}@partner.org`)), 'registration'));
  expect(new Set(await importUserBatch(tenant, linesAt(facts, IMPORT_TIME)))).toEqual(new Set(['applied']));
  const known = await learnerRecords(db).readMany(facts.map((f) => f.id));
  expect(known.size).toBe(BEYOND_ONE_IN);
  expect(
    await db.collection<{ _id: string; org: string | null }>(COLLECTIONS.users).countDocuments({ _id: { $in: facts.map((f) => String(f.id)) }, org: null }),
  ).toBe(0);
  expect(await db.collection(COLLECTIONS.memberships).countDocuments({ org: 'org-a', automatic: true })).toBe(BEYOND_ONE_IN);
  // Again: every user reflects these very lines, so the batch answers them all as duplicates and writes nothing.
  expect(new Set(await importUserBatch(tenant, linesAt(facts, IMPORT_TIME)))).toEqual(new Set(['duplicate']));
}, 300_000); // also writes each user's search grams (about 20 documents a user)

/** New learners 1 to n after `from`: one in ten at the rule's domain, one in twenty inactive. */
const newLines = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => {
    const id = from + i;
    return line(id, `n${id}@${id % 10 === 0 ? 'partner.org' : 'example.com'}`, { active: id % 20 !== 0 });
  });

async function importText(db: Db, name: string, lines: string[], opts: { chunkSize?: number } = {}): Promise<ImportSummary> {
  const path = join(dir, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  return importFiles(db, { users: path, chunkSize: opts.chunkSize ?? 2000, concurrency: 4, out: new PassThrough() });
}

test('a batch import of many new learners leaves the users, rule memberships and change events of a line-by-line import', async () => {
  // 200 new learners in chunks of 150: two chunks, the second mixing new learners with LINES' special cases.
  const lines = [...LINES, ...newLines(1000, 200)];
  const oneByOne = await world();
  const expectedCounts = await applyOneByOne(oneByOne, lines, IMPORT_TIME);
  const batched = await world();
  expect(await importText(batched, 'many.jsonl', lines, { chunkSize: 150 })).toEqual(expectedCounts);
  const [got, want] = [await state(batched), await state(oneByOne)];
  expect(got).toEqual(want);
  // Not vacuous: the 10 active new learners of the rule's domain (1010, 1030, ... 1190) joined by rule, each with its change event, the rule's doing.
  expect(want.changes.filter((c) => /^memberships\|org-a\|1\d\d\d\|rule$/.test(c))).toHaveLength(10);
  await membershipIdsAreUnique(batched);
}, 120_000);

test('an event on an imported learner while the import runs is not lost, whichever lands first', async () => {
  const db = await world();
  // 600 learners in chunks of 250: three chunks, so updates land before, during and after chunks and between them.
  const ids = Array.from({ length: 600 }, (_, i) => 30000 + i);
  const touched = ids.filter((id) => id % 5 === 0);
  const importing = importText(db, 'racing.jsonl', newLines(30000, 600), { chunkSize: 250 });
  // user.updated events, newer than the import, 8 at once, landing before, during and after each chunk's writes.
  let next = 0;
  const update = async () => {
    while (next < touched.length) {
      const id = touched[next++]!;
      const data = parse(line(id, `changed${id}@example.com`));
      await applyUserData(db, { ...data, user: { ...data.user, pii: { ...data.user.pii, name: 'Changed' } } }, LATER, 'update', 'org-a');
    }
  };
  await Promise.all([importing, ...Array.from({ length: 8 }, update)]);
  const summary = await importing;
  expect(summary.read).toBe(600);
  const users = await db
    .collection<{ _id: string; id: number; name: string; email: string; event_time: string }>(COLLECTIONS.users)
    .find({ _id: { $in: ids.map(String) } })
    .toArray();
  expect(users).toHaveLength(600);
  const byId = new Map(users.map((u) => [u.id, u]));
  for (const id of touched) expect(byId.get(id)).toMatchObject({ name: 'Changed', email: `changed${id}@example.com`, event_time: LATER });
  for (const id of ids.filter((i) => i % 5 !== 0)) expect(byId.get(id)).toMatchObject({ name: `User ${id}`, event_time: IMPORT_TIME });
}, 180_000);

test('importing the same file again changes nothing and publishes nothing', async () => {
  const db = await world();
  const lines = [...LINES, ...newLines(2000, 300)];
  await importText(db, 'again-1.jsonl', lines);
  const everything = async () => {
    const all = (name: string) => db.collection(name).find({}).sort({ org: 1, _id: 1 }).toArray();
    return {
      users: await all(COLLECTIONS.users),
      memberships: await all(COLLECTIONS.memberships),
      grams: await db.collection(COLLECTIONS.userGrams).countDocuments({}),
      outbox: await all(COLLECTIONS.outbox),
      counters: await all(COLLECTIONS.counters),
    };
  };
  const before = await everything();
  const summary = await importText(db, 'again-2.jsonl', lines);
  expect(summary).toEqual({ read: lines.length, applied: 0, unchanged: lines.length, refused: 0 });
  expect(await everything()).toEqual(before);
  expect(before.memberships.length).toBeGreaterThan(20); // not vacuous: the first import made rule memberships
}, 120_000);

test('applying a rule to existing learners, a page of 500 at a time in one insert each, joins every active match once, by the rule, and none retired meanwhile', async () => {
  const db = await world();
  const tenant = new Tenant(db, 'org-a');
  // 600 learners: two pages of applyRule (500, then the rest), so a page boundary is crossed.
  const ids = Array.from({ length: 600 }, (_, i) => 40000 + i);
  // Every learner at the new rule's domain; one in twenty inactive; one in ten already a member elsewhere.
  await importText(
    db,
    'apply.jsonl',
    ids.map((id) => line(id, `a${id}@later.org`, { active: id % 20 !== 5 })),
  );
  for (const id of ids.filter((i) => i % 10 === 3)) await giveMembership(tenant, { user: id, group: 2, automatic: false });
  const group = await createGroup(tenant, { name: 'Later', description: '' });
  const rule = await createRule(tenant, { name: 'later', domain: 'later.org', group: group.id });
  const retired = ids.filter((i) => i % 10 === 7);
  const applying = applyRule(tenant, rule.id);
  for (const id of retired) await retireUser(db, id, LATER);
  const created = await applying;
  const members = await db
    .collection<{ user: number; group: number; automatic: boolean }>(COLLECTIONS.memberships)
    .find({ org: 'org-a', user: { $gte: 40000 } })
    .toArray();
  const byUser = new Map(members.map((m) => [m.user, m]));
  const joining = ids.filter((i) => i % 20 !== 5 && i % 10 !== 3 && i % 10 !== 7);
  expect(created).toBeGreaterThanOrEqual(joining.length);
  for (const id of joining) expect(byUser.get(id)).toMatchObject({ group: group.id, automatic: true });
  for (const id of ids.filter((i) => i % 10 === 3)) expect(byUser.get(id)).toMatchObject({ group: 2, automatic: false });
  for (const id of [...retired, ...ids.filter((i) => i % 20 === 5)]) expect(byUser.has(id)).toBe(false);
  // Each new membership is the rule's change event, and the learners' list facts show the group.
  const changes = await changeIntents(db);
  for (const id of joining) expect(changes).toContain(`${COLLECTIONS.memberships}|org-a|${id}|rule`);
  const users = await db
    .collection<{ _id: string; id: number; grp: number }>(COLLECTIONS.users)
    .find({ _id: { $in: joining.map(String) } })
    .toArray();
  expect(users.every((u) => u.grp === group.id)).toBe(true);
  expect(await applyRule(tenant, rule.id)).toBe(0);
  await membershipIdsAreUnique(db);
}, 180_000);
