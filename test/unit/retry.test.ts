// The one retry loop (src/retry.ts): capped exponential backoff until success, or until told to stop.
import { backoffDelay, retry } from '../../src/retry';

const noWait = async () => true;

test('the pause doubles after each failure and stops growing at the cap', () => {
  const policy = { initialMs: 200, maxMs: 1000 };
  expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, policy))).toEqual([200, 400, 800, 1000, 1000]);
});

test('an operation is tried until it succeeds, and each failure is reported with the pause to come', async () => {
  const seen: [number, number][] = [];
  let calls = 0;
  const result = await retry(
    async (attempt) => {
      calls++;
      if (attempt < 4) throw new Error(`fail ${attempt}`);
      return 'done';
    },
    { policy: { initialMs: 10, maxMs: 25 }, onFailure: (_err, attempt, delay) => void seen.push([attempt, delay]), wait: noWait },
  );
  expect(result).toBe('done');
  expect(calls).toBe(4);
  expect(seen).toEqual([
    [1, 10],
    [2, 20],
    [3, 25],
  ]);
});

test('onFailure returning false gives up with the error at once', async () => {
  let calls = 0;
  const failing = retry(
    async () => {
      calls++;
      throw new Error('permanent');
    },
    { policy: { initialMs: 1, maxMs: 1 }, onFailure: () => false, wait: noWait },
  );
  await expect(failing).rejects.toThrow('permanent');
  expect(calls).toBe(1);
});

test('a wait that resolves false stops retrying with the last error', async () => {
  let calls = 0;
  let waits = 0;
  const failing = retry(
    async () => {
      calls++;
      throw new Error(`fail ${calls}`);
    },
    { policy: { initialMs: 1, maxMs: 1 }, wait: async () => ++waits < 3 },
  );
  await expect(failing).rejects.toThrow('fail 3');
  expect(calls).toBe(3);
});

test('the default wait is a real timer', async () => {
  const started = Date.now();
  let calls = 0;
  await retry(
    async () => {
      if (++calls === 1) throw new Error('once');
    },
    { policy: { initialMs: 30, maxMs: 30 } },
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(25);
});
