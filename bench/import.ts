/**
 * `npm run bench:import -- [lines] [concurrency] [passes] [chunk]`: generates a users JSON Lines file
 * of `lines` lines (default 20,000) in a temp dir, imports it into a fresh database with the `cag import`
 * code (`chunk` lines at a time, default the command's; `concurrency` lines one by one at once where
 * a line goes per event), and prints lines/s and the process's peak RSS, then imports it again
 * (all unchanged) unless `passes` is 1. Then the ceiling of the same run: the same users' documents
 * and search grams written with plain `insertMany` (10,000 a command) into a scratch database,
 * what any first import must write at least; the first import's ratio to it is printed.
 * The file and the databases are removed afterwards; nothing generated is kept.
 */

import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { MongoClient } from 'mongodb';
import { DEFAULT_CHUNK_SIZE, importFiles } from '../src/cli/import';
import { createMongoClient } from '../src/db/client';
import { COLLECTIONS, ensureIndexes } from '../src/db/collections';
import { gramsOf, userSearchFields } from '../src/db/search-index';
import { Tenant } from '../src/db/tenant';
import { createGroup } from '../src/domain/groups';
import { firstRecord } from '../src/domain/learners';
import { createRule } from '../src/domain/membership-rules';

const ORG = 'bench-import';
const lines = Number(process.argv[2] ?? 20000);
const concurrency = Number(process.argv[3] ?? 16);
const chunkSize = Number(process.argv[5] ?? DEFAULT_CHUNK_SIZE);

async function generate(path: string) {
  const out = createWriteStream(path);
  for (let id = 1; id <= lines; id++) {
    // One user in ten is at the rule's domain, one in twenty inactive: rules are applied too.
    const domain = id % 10 === 0 ? 'partner.example' : 'example.com';
    const line = JSON.stringify({
      user: { id, is_active: id % 20 !== 0, pii: { username: `user${id}`, email: `user${id}@${domain}`, name: `User ${id}` } },
      organization: ORG,
    });
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Lines per second of writing the users' documents and search grams with nothing else: plain inserts, 10,000 a command. */
async function rawInserts(client: MongoClient): Promise<number> {
  const scratch = client.db(`bench_import_ceiling_${Date.now().toString(36)}`);
  try {
    await ensureIndexes(scratch);
    const started = process.hrtime.bigint();
    for (let first = 1; first <= lines; first += DEFAULT_CHUNK_SIZE) {
      const users = [];
      const grams = [];
      for (let id = first; id < first + DEFAULT_CHUNK_SIZE && id <= lines; id++) {
        const doc = {
          ...firstRecord(
            { id, username: `user${id}`, name: `User ${id}`, email: `user${id}@example.com`, is_active: true },
            ORG,
            '1970-01-01T00:00:00.000000000Z',
            true,
            null,
          ),
          org: ORG,
        };
        users.push(doc);
        for (const g of gramsOf(userSearchFields(doc))) grams.push({ _id: `${id}|${g}`, org: ORG, g, r: id, t: doc.event_time });
      }
      await scratch.collection<{ _id: string }>(COLLECTIONS.users).insertMany(users, { ordered: false });
      for (let i = 0; i < grams.length; i += 10_000)
        await scratch.collection<{ _id: string }>(COLLECTIONS.userGrams).insertMany(grams.slice(i, i + 10_000), { ordered: false });
    }
    return lines / (Number(process.hrtime.bigint() - started) / 1e9);
  } finally {
    await scratch.dropDatabase().catch(() => undefined);
  }
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'cag-bench-'));
  const client = createMongoClient(process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/');
  const db = client.db(`bench_import_${Date.now().toString(36)}`);
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 250);
  try {
    const file = join(dir, 'users.jsonl');
    await generate(file);
    console.log(`generated ${lines} lines (${((await stat(file)).size / 1e6).toFixed(1)} MB); concurrency ${concurrency}, chunks of ${chunkSize}`);
    await ensureIndexes(db);
    const tenant = new Tenant(db, ORG);
    const group = await createGroup(tenant, { name: 'Partners', description: '' });
    await createRule(tenant, { name: 'partners', domain: 'partner.example', group: group.id });

    const progress = Object.assign(new PassThrough(), { isTTY: false });
    progress.on('data', (chunk) => process.stderr.write(chunk));
    const passes = ['first import', 'second import (all unchanged)'].slice(0, Number(process.argv[4] ?? 2));
    const rates: number[] = [];
    for (const pass of passes) {
      const started = process.hrtime.bigint();
      const summary = await importFiles(db, { users: file, concurrency, chunkSize, out: progress });
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
      const rate = summary.read / seconds;
      console.log(
        `${pass}: ${JSON.stringify(summary)} in ${seconds.toFixed(1)} s = ${rate.toFixed(0)} lines/s; ` +
          `1,000,000 lines at this rate: ${(1e6 / rate / 60).toFixed(1)} min; peak RSS so far ${(peakRss / 1048576).toFixed(0)} MiB`,
      );
      rates.push(rate);
    }
    const ceiling = await rawInserts(client);
    console.log(
      `ceiling: the same users and grams by plain insertMany: ${ceiling.toFixed(0)} lines/s; first import / ceiling = ${(rates[0]! / ceiling).toFixed(2)}`,
    );
  } finally {
    clearInterval(sampler);
    await db.dropDatabase().catch(() => undefined);
    await client.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
