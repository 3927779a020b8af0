/**
 * `npm run bench:plugin`: the Open edX plugin's pipeline steps (integrations/openedx/bench/bench_steps.py,
 * the real openedx-filters run_filter) against the service at the data size of `npm run bench`
 * (BENCH_USERS, BENCH_COURSES, BENCH_GROUPS), one call after another as one LMS worker makes them.
 * Seeds a fresh database, starts the service as a child process, prints each step's latency
 * percentiles, drops the database. Asserts nothing.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { MAIN_ORG, seedBenchData } from './seed';
import { sign, startServiceProcess } from './suite';

const ROOT = path.resolve(__dirname, '..');
const num = (name: string, fallback: number) => {
  const value = Number(process.env[name] || fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};

async function main(): Promise<void> {
  const mongoUrl = process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/';
  const scale = { users: num('BENCH_USERS', 100_000), courses: num('BENCH_COURSES', 1_000), groups: num('BENCH_GROUPS', 100) };
  const iterations = num('BENCH_PLUGIN_ITERATIONS', 2_000);
  const python = execFileSync('bash', [path.join(ROOT, 'scripts/openedx-plugin.sh')], { encoding: 'utf8' }).trim();
  const dbName = `bench_plugin_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const client = new MongoClient(mongoUrl);
  let service: Awaited<ReturnType<typeof startServiceProcess>> | undefined;
  try {
    const started = Date.now();
    const data = await seedBenchData(client.db(dbName), scale);
    process.stderr.write(`seeded ${scale.users} users, ${scale.courses} courses, ${scale.groups} groups in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    service = await startServiceProcess({ mongoUrl, logLevel: 'warn' }, dbName, 'on');
    const token = await sign({ user_id: 900_000_001, roles: ['service'] });
    // Random learners and courses of the main organization (some members of a linked group, most not).
    const request = {
      user_ids: data.userIds.filter((_, i) => i % Math.max(1, Math.floor(data.userIds.length / 5_000)) === 0),
      course_keys: data.courseKeys,
      iterations,
      warmup: Math.min(200, iterations),
      listing_size: 10,
    };
    process.stderr.write(
      `organization ${MAIN_ORG}: ${request.user_ids.length} learners, ${request.course_keys.length} courses; ${iterations} calls per step\n`,
    );
    const lines = await new Promise<string>((resolve, reject) => {
      const child = spawn(python, [path.join(ROOT, 'integrations/openedx/bench/bench_steps.py')], {
        env: { ...process.env, CAG_SERVICE_URL: service!.serviceUrl, CAG_SERVICE_TOKEN: token, PYTHONDONTWRITEBYTECODE: '1' },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (chunk) => {
        out += chunk;
      });
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`bench_steps.py exited with ${code}`))));
      child.stdin.end(JSON.stringify(request));
    });
    process.stdout.write('| step | calls | p50 ms | p95 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n');
    for (const line of lines.trim().split('\n')) {
      const r = JSON.parse(line) as { step: string; n: number; p50: number; p95: number; p99: number; max: number };
      process.stdout.write(`| ${r.step} | ${r.n} | ${r.p50} | ${r.p95} | ${r.p99} | ${r.max} |\n`);
    }
  } finally {
    await service?.stop();
    await client.db(dbName).dropDatabase();
    await client.close();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:plugin failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
