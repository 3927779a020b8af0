import { failureReporter } from '../../src/failure-report';

/** A logger that records what it is told (the reporter's only output). */
function recorder() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_fields: unknown, msg: string) => lines.push({ level, msg });
  return { lines, log: { error: at('error'), warn: at('warn'), debug: at('debug') } as never };
}

test('a failure naming a setting: one error line, then a warn line with the reason at most once a minute while it lasts, debug in between; a new reason is an error line again', () => {
  const { lines, log } = recorder();
  let now = 0;
  const refused = { reason: 'Kafka broker b:9096 refused the SASL credentials', setting: 'KAFKA_SASL_PASSWORD' };
  let described = refused;
  const report = failureReporter(
    'broker',
    log,
    () => described,
    60_000,
    () => now,
  );
  for (let i = 0; i < 13; i++) {
    report(new Error('x'), i + 1, 10_000);
    now += 10_000; // the backoff's cap
  }
  expect(lines.filter((l) => l.level === 'error')).toEqual([{ level: 'error', msg: refused.reason }]);
  // 0 s error; 60 s and 120 s warn: every minute, with the reason.
  expect(lines.filter((l) => l.level === 'warn')).toEqual([
    { level: 'warn', msg: `broker still not reachable; retrying: ${refused.reason}` },
    { level: 'warn', msg: `broker still not reachable; retrying: ${refused.reason}` },
  ]);
  expect(lines.filter((l) => l.level === 'debug')).toHaveLength(10);
  described = { reason: 'Kafka broker b:9096 presented a certificate this process does not trust', setting: 'KAFKA_SSL_CA_FILE' };
  report(new Error('y'), 14, 10_000);
  expect(lines.at(-1)).toEqual({ level: 'error', msg: described.reason });
});

test('a failure naming no setting (a broker that is down): a warn line at every retry', () => {
  const { lines, log } = recorder();
  const report = failureReporter('broker', log, () => ({ reason: 'not reachable', setting: null }));
  report(new Error('ECONNREFUSED'), 1, 500);
  report(new Error('ECONNREFUSED'), 2, 1000);
  expect(lines).toEqual([
    { level: 'warn', msg: 'broker not reachable yet; retrying' },
    { level: 'warn', msg: 'broker not reachable yet; retrying' },
  ]);
});
