/**
 * `npm run bench`. Scale and load come from the environment; the defaults are the data set the
 * README's Performance table reports. Prints one Markdown table and the targets, asserts nothing.
 */
import { runBenchSuite } from './suite';

const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return value;
};

async function main(): Promise<void> {
  const result = await runBenchSuite({
    mongoUrl: process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/',
    kafkaBrokers: process.env.KAFKA_BROKERS || '127.0.0.1:9092',
    schemaRegistryUrl: process.env.SCHEMA_REGISTRY_URL || 'http://127.0.0.1:8081/apis/ccompat/v7',
    events: num('BENCH_EVENTS', 100_000),
    users: num('BENCH_USERS', 100_000),
    ...(process.env.BENCH_OTHER_USERS ? { otherUsers: num('BENCH_OTHER_USERS', 0) } : {}),
    otherGrams: process.env.BENCH_OTHER_GRAMS !== 'false',
    courses: num('BENCH_COURSES', 1_000),
    groups: num('BENCH_GROUPS', 100),
    connections: num('BENCH_CONNECTIONS', 4),
    duration: num('BENCH_DURATION', 10),
    warmup: num('BENCH_WARMUP', 2),
    compareWithoutCache: process.env.BENCH_COMPARE_CACHE !== 'false',
    rows: process.env.BENCH_ROWS === 'lists' ? 'lists' : 'all',
    logLevel: process.env.BENCH_LOG_LEVEL || 'info',
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`\n${result.table}\n\nTargets (measured, not asserted):\n${result.targets.map((t) => `- ${t}`).join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
