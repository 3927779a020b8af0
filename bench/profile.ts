/**
 * `npm run profile -- activation|access|change-log|lists|candidates|import|events`: where one request's time goes,
 * command by command (the driver's command monitoring), on the server at MONGO_URL, one client,
 * no concurrency. The benchmark says how fast; this says why.
 *
 * - `activation`: PROFILE_EVENTS (300) new users applied one after another as the consumer
 *   applies an activation (user upsert, list facts, search grams, rule membership); per
 *   activation, each kind of command's count and time.
 * - `access`: single decisions on the same data set as `lists`, with the cache off (what a miss
 *   costs) and on (what a hit costs), each command with its time.
 * - `change-log`: one read and one update of a full change-log document, its entries stored as
 *   JSON strings (as src/db/change-log.ts does) and as sub-documents.
 * - `events`: PROFILE_EVENTS (20,000) activations of new users, a fifth matching a rule, given to
 *   the consumer's batch path (consumers/batch.ts) in runs of EVENT_BATCH_SIZE (500) as one
 *   partition's fetch would; each kind of command's count and time.
 * - `import`: `cag import` of PROFILE_LINES (20,000) new users, a tenth matching a rule, then of
 *   the same file again; per pass, each kind of command's count and time.
 * - `lists`: the bench's list requests on its data set (bench/seed.ts, PROFILE_USERS users,
 *   100,000 by default), each once warm, with every command it sends and its time. The data set
 *   takes minutes to seed: it is kept in the database `profile_lists_<users>` for the next run
 *   (PROFILE_DROP=1 drops it at the end).
 * - `candidates`: what a search's exact check costs per candidate, on the same data set: 300 users
 *   read by `_id` (as a two-term search reads its rarest trigram's records), ten reads each with
 *   the whole documents, with the terms' patterns in the filter, and with two projections.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { type Db, MongoClient } from 'mongodb';
import { importFiles } from '../src/cli/import';
import { CHANGE_LOG_LENGTH, encodeEntry } from '../src/db/change-log';
import { COLLECTIONS, ensureIndexes, type GroupDoc, type RuleDoc } from '../src/db/collections';
import { Tenant } from '../src/db/tenant';
import { decide } from '../src/domain/access-decisions';
import { createGroup } from '../src/domain/groups';
import { createRule } from '../src/domain/membership-rules';
import { applyUserData, type UserEventData } from '../src/domain/user-event-data';
import { createFactsCache } from '../src/features/access/cache';
import { accessQueries } from '../src/features/access/queries';
import { courseQueries } from '../src/features/courses/queries';
import { userQueries } from '../src/features/users/queries';
import { profileBatchPath } from './events';
import { MAIN_ORG, seedBenchData } from './seed';

const url = process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/';

/** Records each command's name, target, filter and time while `on`. */
function monitor(client: MongoClient) {
  const started = new Map<number, { at: number; what: string; kind: string }>();
  const done: { what: string; kind: string; ms: number }[] = [];
  let on = false;
  client.on('commandStarted', (e) => {
    if (!on) return;
    const c = e.command as Record<string, unknown>;
    const filter = c.filter ?? c.query ?? c.pipeline ?? (c.updates as { q?: unknown }[] | undefined)?.[0]?.q ?? '';
    const page = `${c.limit ? ` limit ${c.limit}` : ''}${c.skip ? ` skip ${c.skip}` : ''}`;
    const kind = `${e.commandName} ${String(c[e.commandName])} ${JSON.stringify(Object.keys(filter as object))}`;
    started.set(e.requestId, {
      at: performance.now(),
      what: `${e.commandName} ${String(c[e.commandName])} ${JSON.stringify(filter).slice(0, 120)}${page}`,
      kind,
    });
  });
  client.on('commandSucceeded', (e) => {
    const s = started.get(e.requestId);
    if (s) done.push({ what: s.what, kind: s.kind, ms: performance.now() - s.at });
  });
  return {
    start: () => {
      on = true;
      done.length = 0;
    },
    take: () => done.splice(0),
  };
}

/** Commands by kind: how many, and their time added up. */
function tally(commands: { kind: string; ms: number }[]): Map<string, { n: number; ms: number }> {
  const byKind = new Map<string, { n: number; ms: number }>();
  for (const c of commands) {
    const k = byKind.get(c.kind) ?? { n: 0, ms: 0 };
    k.n++;
    k.ms += c.ms;
    byKind.set(c.kind, k);
  }
  return byKind;
}

async function activations(client: MongoClient, db: Db) {
  const events = Number(process.env.PROFILE_EVENTS || 300);
  await ensureIndexes(db);
  const tenant = new Tenant(db, 'org-profile');
  const group = await tenant.nextId('groups');
  await tenant.collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: String(group), id: group, name: 'profiled', description: '' });
  const rule = await tenant.nextId('membership_rules');
  await tenant.collection<RuleDoc>(COLLECTIONS.rules).insertOne({ _id: `${tenant.org}|profile.org`, id: rule, name: 'profiled', domain: 'profile.org', group });
  const activate = (i: number) => {
    const user = {
      id: i,
      is_active: true,
      is_staff: false,
      is_site_admin: false,
      pii: { username: `user${i}`, name: `Learner Number ${i}`, email: `user${i}@profile.org` },
    };
    return applyUserData(
      db,
      { organization: tenant.org, user } as UserEventData,
      new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
      'registration',
      tenant.org,
    );
  };
  for (let i = 1; i <= 20; i++) await activate(i); // warm-up
  const watch = monitor(client);
  watch.start();
  const t0 = performance.now();
  for (let i = 21; i < 21 + events; i++) await activate(i);
  const total = performance.now() - t0;
  const byKind = tally(watch.take());
  console.log(`${events} activations, one after another: ${(total / events).toFixed(1)} ms each\n`);
  console.log('| command, collection, filter fields | per activation | ms per activation |\n|---|---:|---:|');
  for (const [kind, k] of [...byKind].sort((a, b) => b[1].ms - a[1].ms))
    console.log(`| ${kind} | ${(k.n / events).toFixed(2)} | ${(k.ms / events).toFixed(2)} |`);
  await db.dropDatabase();
}

/** The bench's data set at PROFILE_USERS users, seeded once and kept for the next run. */
async function benchData(client: MongoClient) {
  const users = Number(process.env.PROFILE_USERS || 100_000);
  const db = client.db(`profile_lists_${users}`);
  if ((await db.collection(COLLECTIONS.users).estimatedDocumentCount()) === 0) {
    console.log(`seeding ${users} users (kept in ${db.databaseName} for the next run)`);
    await ensureIndexes(db);
    await seedBenchData(db, { users, courses: 1000, groups: 100 });
  }
  return { db, users };
}

async function access(client: MongoClient) {
  const { db, users } = await benchData(client);
  const courses = await db
    .collection(COLLECTIONS.courses)
    .find({ org: MAIN_ORG }, { projection: { _id: 1 } })
    .limit(50)
    .toArray();
  const watch = monitor(client);
  for (const enabled of [false, true]) {
    const repository = accessQueries(db, createFactsCache(db, { enabled }));
    const ask = async (user: number, course: string) => decide((await repository.facts([course], user, () => true)).get(course)!);
    await ask(7, String(courses[0]!._id)); // warm-up (and, with the cache, the same pair again below)
    for (const [user, course] of [
      [Math.floor(users / 2), String(courses[1]!._id)],
      [7, String(courses[0]!._id)],
    ] as const) {
      watch.start();
      const t0 = performance.now();
      const decision = await ask(user, course);
      console.log(`\naccess user ${user}, ${course}, cache ${enabled ? 'on' : 'off'}: ${(performance.now() - t0).toFixed(1)} ms (${decision.reason})`);
      for (const c of watch.take()) console.log(`  ${c.ms.toFixed(1).padStart(6)} ms  ${c.what}`);
    }
  }
  if (process.env.PROFILE_DROP === '1') await db.dropDatabase();
}

async function lists(client: MongoClient) {
  const { db, users } = await benchData(client);
  const tenant = new Tenant(db, MAIN_ORG);
  const page = (offset = 0) => ({ limit: 20, offset });
  const requests: [string, () => Promise<{ count: number }>][] = [
    ['users/?search=cedar 417', () => userQueries(tenant).list(page(), { search: 'cedar 417' })],
    ['users/?search=ced', () => userQueries(tenant).list(page(), { search: 'ced' })],
    ['users/?group=5', () => userQueries(tenant).list(page(), { group: '5' })],
    ['users/?no_group=true', () => userQueries(tenant).list(page(), { no_group: 'true' })],
    [`users/?offset=${users - 1000}`, () => userQueries(tenant).list(page(users - 1000), {})],
    ['courses/?group=5', () => courseQueries(tenant).list(page(), { group: '5' })],
    ['courses/?search=cedar&is_public=false', () => courseQueries(tenant).list(page(), { search: 'cedar', is_public: 'false' })],
  ];
  const watch = monitor(client);
  for (const [name, request] of requests) {
    await request();
    watch.start();
    const t0 = performance.now();
    const { count } = await request();
    console.log(`\n${name}: ${(performance.now() - t0).toFixed(1)} ms (count ${count})`);
    for (const c of watch.take()) console.log(`  ${c.ms.toFixed(1).padStart(6)} ms  ${c.what}`);
  }
  if (process.env.PROFILE_DROP === '1') await db.dropDatabase();
}

async function candidates(client: MongoClient) {
  const { db, users } = await benchData(client);
  const records = db.collection(COLLECTIONS.users);
  const ids = Array.from({ length: 300 }, (_, i) => String(1 + Math.floor((i * users) / 300)));
  const term = (t: string) => ({ $or: ['username', 'name', 'email'].map((f) => ({ [f]: { $regex: t, $options: 'i' } })) });
  const byId = { _id: { $in: ids }, org: MAIN_ORG } as Record<string, unknown>;
  const reads: [string, () => Promise<unknown[]>][] = [
    ['whole documents', () => records.find(byId).toArray()],
    ["with a two-term search's patterns", () => records.find({ ...byId, listed: 1, $and: [term('cedar'), term('417')] }).toArray()],
    ['projected to the searched fields', () => records.find(byId, { projection: { _id: 0, id: 1, username: 1, name: 1, email: 1, listed: 1 } }).toArray()],
    ['projected to _id', () => records.find(byId, { projection: { _id: 1 } }).toArray()],
  ];
  console.log(`\n${ids.length} users by _id, ten reads each\n\n| read | ms a read | ms a candidate |\n|---|---:|---:|`);
  for (const [name, read] of reads) {
    await read();
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) await read();
    const ms = (performance.now() - t0) / 10;
    console.log(`| ${name} | ${ms.toFixed(1)} | ${(ms / ids.length).toFixed(2)} |`);
  }
  if (process.env.PROFILE_DROP === '1') await db.dropDatabase();
}

/**
 * What one read and one update of a full change-log document cost (src/db/change-log.ts), with
 * its 64 entries stored as it stores them (JSON strings) and as sub-documents, the obvious form.
 */
async function changeLogCost(db: Db) {
  const rounds = Number(process.env.PROFILE_ROUNDS || 300);
  const forms: [string, (n: number) => unknown][] = [
    ['JSON strings (as stored)', (n) => encodeEntry({ k: String(100_000 + n), o: MAIN_ORG, i: 'a1b2c3d4e5f6a1b2c3d4e5f6' })],
    ['sub-documents', (n) => ({ k: String(100_000 + n), o: MAIN_ORG, i: 'a1b2c3d4e5f6a1b2c3d4e5f6' })],
  ];
  console.log(`\n${CHANGE_LOG_LENGTH}-entry change log, ${rounds} rounds each\n\n| entries as | update ms | read ms |\n|---|---:|---:|`);
  for (const [name, entry] of forms) {
    const log = db.collection<{ _id: string; seq: number; log: unknown[] }>('change_log_forms');
    const _id = name;
    await log.insertOne({ _id, seq: CHANGE_LOG_LENGTH, log: Array.from({ length: CHANGE_LOG_LENGTH }, (_, n) => entry(n)) });
    let t0 = performance.now();
    for (let n = 0; n < rounds; n++) await log.updateOne({ _id }, { $inc: { seq: 1 }, $push: { log: { $each: [entry(n)], $slice: -CHANGE_LOG_LENGTH } } });
    const update = (performance.now() - t0) / rounds;
    t0 = performance.now();
    for (let n = 0; n < rounds; n++) await log.findOne({ _id });
    console.log(`| ${name} | ${update.toFixed(2)} | ${((performance.now() - t0) / rounds).toFixed(2)} |`);
  }
  await db.dropDatabase();
}

/** Activations of new users through the consumer's batch path, run by run (bench/events.ts): each kind of command's count and time. */
async function eventsProfile() {
  const events = Number(process.env.PROFILE_EVENTS || 20_000);
  const runSize = Number(process.env.EVENT_BATCH_SIZE || 500);
  const { seconds, commands, byKind } = await profileBatchPath(url, `profile_events_${Date.now().toString(36)}`, events, runSize);
  console.log(
    `\n${events} activations of new learners, a fifth matching a rule, in runs of ${runSize}: ${seconds.toFixed(1)} s (${(events / seconds).toFixed(0)} events/s), ${commands} commands (${(commands / events).toFixed(3)} an event)\n`,
  );
  console.log('| command, collection | commands | ms in all | share of the time |\n|---|---:|---:|---:|');
  for (const [kind, k] of [...byKind].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12))
    console.log(`| ${kind} | ${k.n} | ${k.ms.toFixed(0)} | ${((k.ms / 1000 / seconds) * 100).toFixed(0)}% |`);
}

/** `cag import` of PROFILE_LINES (20,000) new users, then of the same file again: each kind of command's count and time, per pass. */
async function importProfile(client: MongoClient, db: Db) {
  const lines = Number(process.env.PROFILE_LINES || 20_000);
  const dir = await mkdtemp(join(tmpdir(), 'cag-profile-'));
  const file = join(dir, 'users.jsonl');
  const user = (id: number) => ({
    user: {
      id,
      is_active: id % 20 !== 0,
      pii: { username: `user${id}`, email: `user${id}@${id % 10 === 0 ? 'profile.org' : 'example.com'}`, name: `User ${id}` },
    },
    organization: 'org-profile',
  });
  await writeFile(file, `${Array.from({ length: lines }, (_, i) => JSON.stringify(user(i + 1))).join('\n')}\n`);
  try {
    await ensureIndexes(db);
    const tenant = new Tenant(db, 'org-profile');
    const group = await createGroup(tenant, { name: 'profiled', description: '' });
    await createRule(tenant, { name: 'profiled', domain: 'profile.org', group: group.id });
    const watch = monitor(client);
    for (const pass of ['first import', 'the same file again']) {
      watch.start();
      const t0 = performance.now();
      await importFiles(db, { users: file, out: new PassThrough() });
      const seconds = (performance.now() - t0) / 1000;
      const byKind = tally(watch.take());
      const commands = [...byKind.values()].reduce((n, k) => n + k.n, 0);
      console.log(
        `\n${pass}: ${lines} lines in ${seconds.toFixed(1)} s (${(lines / seconds).toFixed(0)} lines/s), ${commands} commands (${(commands / lines).toFixed(3)} a line)\n`,
      );
      console.log('| command, collection, filter fields | commands | ms in all (overlapping) |\n|---|---:|---:|');
      for (const [kind, k] of [...byKind].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12)) console.log(`| ${kind} | ${k.n} | ${k.ms.toFixed(0)} |`);
    }
  } finally {
    await db.dropDatabase();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main() {
  const mode = process.argv[2];
  const modes = ['activation', 'access', 'lists', 'candidates', 'change-log', 'import', 'events'];
  if (!mode || !modes.includes(mode)) throw new Error(`usage: npm run profile -- ${modes.join('|')}`);
  const client = await new MongoClient(url, { monitorCommands: true }).connect();
  try {
    if (mode === 'activation') await activations(client, client.db(`profile_activation_${Date.now().toString(36)}`));
    else if (mode === 'access') await access(client);
    else if (mode === 'events') await eventsProfile();
    else if (mode === 'import') await importProfile(client, client.db(`profile_import_${Date.now().toString(36)}`));
    else if (mode === 'candidates') await candidates(client);
    else if (mode === 'change-log') await changeLogCost(client.db(`profile_change_log_${Date.now().toString(36)}`));
    else await lists(client);
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
