// `npm run bench` (issue 5) at a tiny scale: every row of the table is there and measured
// something. Timings are never asserted: the machine is shared and they mean nothing here.
import { runBenchSuite } from '../../bench/suite';
import { KAFKA_BROKERS, MONGO_URL, SCHEMA_REGISTRY_URL } from '../helpers/stack';

test('the bench suite runs at a tiny scale and reports every row with a positive rate and no failure', async () => {
  const result = await runBenchSuite({
    mongoUrl: MONGO_URL,
    kafkaBrokers: KAFKA_BROKERS,
    schemaRegistryUrl: SCHEMA_REGISTRY_URL,
    events: 50,
    users: 200,
    courses: 40,
    groups: 5,
    connections: 2,
    duration: 1,
    warmup: 0,
    compareWithoutCache: true,
    // Other test files run beside this one: waiting for an idle stack before each row would only
    // wait (up to a minute a row), and no rate is asserted here. The probe itself still runs.
    idle: { probeMs: 100, waitMs: 0 },
    logLevel: 'silent',
  });
  expect(result.rows.map((r) => r.row)).toEqual([
    'ceiling',
    'access single',
    'access batch 100',
    'access single, 100 returning users',
    'access single, 100 returning users, 50 user events/s',
    'users search',
    'users search, 2 terms',
    'users by group',
    'users without group',
    'users by email',
    'users deep page',
    'courses by group',
    'courses search, private',
    'admin writes: events and audit off (ceiling)',
    'admin writes: events and audit on',
    'events: kafkajs + one upsert per message (ceiling)',
    'events: activation -> user + membership (service consumer)',
    'events: the same in Avro through the schema registry (service consumer)',
    'events: the batch path alone, runs of 500 (database commands counted)',
    'events: a burst of 50 while 50 access decisions/s are answered',
    'access single (cache off)',
    'access batch 100 (cache off)',
    'access single, 100 returning users (cache off)',
  ]);
  for (const row of result.rows) {
    expect(row.failed).toBeUndefined();
    expect(row.rate).toBeGreaterThan(0);
    // Ceilings (the HTTP one and the events one) have none of their own; every other row has one.
    const isCeiling = row.row === 'ceiling' || row.row.endsWith('(ceiling)');
    expect({ row: row.row, hasCeiling: row.ceilingRate !== null && row.ceilingRate > 0 }).toEqual({ row: row.row, hasCeiling: !isCeiling });
  }
  expect(result.peakRssMiB).toBeGreaterThan(0);
  expect(result.table.split('\n')).toHaveLength(2 + result.rows.length);
  expect(result.targets).toHaveLength(21);
}, 180_000);
