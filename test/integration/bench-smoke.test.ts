// `npm run bench` (issue 5) at a tiny scale: every row of the table is there and measured
// something. Timings are never asserted: the machine is shared and they mean nothing here.
import { runBenchSuite } from '../../bench/suite';
import { adminFeatures, openFeatures } from '../../src/features';
import { MONGO_URL } from '../helpers/stack';

/** Rows whose endpoint another branch adds; until it is merged they must be reported failed, never fast. */
const rowEndpoints: Record<string, string> = { 'users search': '/users/', 'courses by group': '/courses/' };
const offered = new Set([...openFeatures, ...adminFeatures].flatMap((f) => Object.keys(f.openapi)));

test('the bench suite runs at a tiny scale and reports every row with a positive rate and no failure', async () => {
  const result = await runBenchSuite({
    mongoUrl: MONGO_URL,
    users: 200,
    courses: 40,
    groups: 5,
    connections: 2,
    duration: 1,
    warmup: 0,
    compareWithoutCache: true,
    logLevel: 'silent',
  });
  expect(result.rows.map((r) => r.row)).toEqual([
    'ceiling',
    'access single',
    'access batch 100',
    'access single, 100 returning users',
    'users search',
    'courses by group',
    'access single (cache off)',
    'access batch 100 (cache off)',
    'access single, 100 returning users (cache off)',
  ]);
  for (const row of result.rows) {
    const endpoint = rowEndpoints[row.row];
    if (endpoint && !offered.has(endpoint)) {
      expect(row.failed).toMatch(/404/); // not merged yet: failed, not silently fast
      continue;
    }
    expect(row.failed).toBeUndefined();
    expect(row.rate).toBeGreaterThan(0);
    expect(row.ceilingRate === null ? row.row : 'has ceiling').toBe(row.row === 'ceiling' ? 'ceiling' : 'has ceiling');
  }
  expect(result.peakRssMiB).toBeGreaterThan(0);
  expect(result.table.split('\n')).toHaveLength(2 + result.rows.length);
  expect(result.targets).toHaveLength(4);
}, 180_000);
