/**
 * What issue 12's derived fields and search grams cost: storage (collStats of users and their
 * grams after seeding the bench's data set) and write time (the derivation steps, timed alone).
 *
 *   npx tsx bench/lists-cost.ts [USERS] [SAMPLES]
 *
 * Uses MONGO_URL (default the local stack) and a throw-away database. Prints one Markdown table.
 */
import { type Db, MongoClient } from 'mongodb';
import { COLLECTIONS, ensureIndexes, type UserDoc } from '../src/db/collections';
import { gramsOf, indexUser, userSearchFields } from '../src/db/search-index';
import { Tenant } from '../src/db/tenant';
import { normalizeEventTime } from '../src/domain/event-time';
import { upsertUser } from '../src/domain/learners';
import { syncUserGroups } from '../src/domain/list-facts';
import { createMembership } from '../src/domain/memberships';
import { MAIN_ORG, seedBenchData } from './seed';

const users = Number(process.argv[2] ?? 20_000);
const samples = Number(process.argv[3] ?? 200);

async function sizes(db: Db, name: string) {
  const s = await db.command({ collStats: name });
  return { count: Number(s.count), avgObjSize: Number(s.avgObjSize), size: Number(s.size), indexes: Number(s.totalIndexSize) };
}

async function timed(n: number, step: (i: number) => Promise<unknown>): Promise<{ median: number; p90: number }> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await step(i);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(n / 2)]!, p90: ms[Math.floor(n * 0.9)]! };
}

async function main() {
  const client = new MongoClient(process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/');
  const db = client.db(`lists_cost_${Date.now().toString(36)}`);
  try {
    await ensureIndexes(db);
    const started = Date.now();
    await seedBenchData(db, { users, courses: 100, groups: 20 });
    const seedSeconds = (Date.now() - started) / 1000;
    const [u, g] = [await sizes(db, COLLECTIONS.users), await sizes(db, COLLECTIONS.userGrams)];
    const tenant = new Tenant(db, MAIN_ORG);
    const time = normalizeEventTime('2030-01-01T00:00:00Z');
    const base = users * 10;
    const facts = (i: number) => ({ id: base + i, username: `probe${i}`, name: `Probe User ${i}`, email: `probe.user${i}@cedar.example.com`, is_active: true });
    // A new user by event: the upsert, then its list facts and grams (what the event now costs).
    const event = await timed(samples, (i) => upsertUser(tenant, facts(i), time));
    // The steps alone, on users that already have them: the gram write for a renamed user, the facts sync.
    const renamed = normalizeEventTime('2031-01-01T00:00:00Z');
    const docs = await tenant.collection<UserDoc>(COLLECTIONS.users).findByIds(Array.from({ length: samples }, (_, i) => String(base + i)));
    const regram = await timed(samples, (i) => indexUser(tenant, { ...docs.get(String(base + i))!, name: `Renamed ${i}`, event_time: renamed }));
    const membership = await timed(samples, (i) => createMembership(tenant, { user: base + i, group: 1 }));
    const syncNoop = await timed(samples, (i) => syncUserGroups(tenant, [base + i]));
    const gramsPerUser = g.count / Math.max(1, u.count - 1);
    const row = (what: string, value: string) => `| ${what} | ${value} |`;
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
    const ms = (t: { median: number; p90: number }) => `${t.median.toFixed(1)} ms median, ${t.p90.toFixed(1)} ms p90`;
    process.stdout.write(
      `${[
        `| ${users} users (bench data set), ${samples} samples per step | |`,
        '|---|---|',
        row('seed (insertMany, with the grams)', `${seedSeconds.toFixed(1)} s`),
        row('users: documents, average size, data, indexes', `${u.count}, ${u.avgObjSize.toFixed(0)} B, ${mib(u.size)}, ${mib(u.indexes)}`),
        row('user_grams: documents, average size, data, indexes', `${g.count}, ${g.avgObjSize.toFixed(0)} B, ${mib(g.size)}, ${mib(g.indexes)}`),
        row('grams per listed user', `${gramsPerUser.toFixed(1)} (one sample user: ${gramsOf(userSearchFields(facts(0))).size})`),
        row(
          'search storage per user (gram data + gram indexes)',
          `${((g.size + g.indexes) / u.count).toFixed(0)} B, against ${((u.size + u.indexes) / u.count).toFixed(0)} B for the user itself`,
        ),
        row('user event, new user (upsert + facts + grams)', ms(event)),
        row('grams rewritten after a rename (indexUser)', ms(regram)),
        row("membership created by an administrator (the learner's entry + projection)", ms(membership)),
        row('facts sync with nothing to change (two reads)', ms(syncNoop)),
      ].join('\n')}\n`,
    );
  } finally {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  }
}

main().catch((err) => {
  process.stderr.write(`lists-cost failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
