/**
 * `npm run load`: 60 s of mixed traffic at 64 connections against the service started as a child
 * process on a fresh database of 2,000 users (bench/mixed.ts). Environment: LOAD_DURATION,
 * LOAD_CONNECTIONS, LOAD_USERS, LOAD_COURSES, LOAD_GROUPS, LOAD_TIMEOUT, MONGO_URL; LOAD_HEAP_SNAPSHOTS
 * names a folder for two heap snapshots of the service (early, end) for bench/heap-diff.ts.
 * Prints the report; asserts nothing.
 */
import { formatMixedReport, runMixedLoad } from './mixed';

const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
};

async function main(): Promise<void> {
  const report = await runMixedLoad({
    mongoUrl: process.env.MONGO_URL || 'mongodb://127.0.0.1:27017/',
    duration: num('LOAD_DURATION', 60),
    connections: num('LOAD_CONNECTIONS', 64),
    users: num('LOAD_USERS', 2000),
    courses: num('LOAD_COURSES', 200),
    groups: num('LOAD_GROUPS', 20),
    timeout: num('LOAD_TIMEOUT', 30),
    logLevel: process.env.LOAD_LOG_LEVEL || 'info',
    ...(process.env.LOAD_HEAP_SNAPSHOTS ? { heapSnapshots: process.env.LOAD_HEAP_SNAPSHOTS } : {}),
    progress: (line) => process.stderr.write(`[load] ${line}\n`),
  });
  process.stdout.write(`${formatMixedReport(report)}\n${JSON.stringify(report)}\n`);
}

main().catch((err) => {
  process.stderr.write(`load failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
