import { AsyncLocalStorage } from 'node:async_hooks';
import { Collection, FindCursor } from 'mongodb';

/**
 * Interleavings of two processes at the points between database calls: what two consumers
 * applying two events of one record at the same moment can do. The calls a point is placed after
 * (a `find` cursor is not one: the points around it are those of the calls before and after).
 */
const CALLS = [
  'findOne',
  'insertOne',
  'insertMany',
  'updateOne',
  'updateMany',
  'deleteOne',
  'deleteMany',
  'findOneAndUpdate',
  'findOneAndDelete',
  'bulkWrite',
] as const;

/**
 * Runs `apply`, and `meanwhile` right after its k-th database call (whatever the collection, the
 * call answered or failed): all of what another process does at that moment. False when `apply`
 * made fewer than k calls, so k = 1, 2, … walks every point between two of its calls.
 */
export async function afterCall(k: number, apply: () => Promise<unknown>, meanwhile: () => Promise<unknown>): Promise<boolean> {
  return (await afterCalls(new Map([[k, meanwhile]]), apply)) >= k;
}

/**
 * Runs `apply`, and each of `points`' processes right after `apply`'s database call of its
 * number (calls the processes make are not counted). How many calls `apply` made.
 */
export async function afterCalls(points: ReadonlyMap<number, () => Promise<unknown>>, apply: () => Promise<unknown>): Promise<number> {
  let calls = 0;
  let meanwhile = false;
  const spies = CALLS.map((method) => {
    const original = Collection.prototype[method] as (...a: unknown[]) => Promise<unknown>;
    return jest.spyOn(Collection.prototype, method).mockImplementation(async function (this: Collection, ...args: unknown[]) {
      const process = meanwhile ? undefined : points.get(++calls);
      if (!process) return original.apply(this, args);
      try {
        return await original.apply(this, args);
      } finally {
        meanwhile = true;
        try {
          await process();
        } finally {
          meanwhile = false;
        }
      }
    } as never);
  });
  try {
    await apply();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return calls;
}

/**
 * Events `x` and `y` of one record, applied one after the other in both orders and then
 * interleaved at every point between two database calls of either, each on a record `fresh()`
 * makes: the interleavings whose end state (`state`, as text) neither order gives, and whether
 * the two orders agree (events of different times must: SPEC §5). How many runs it made.
 */
export async function everyInterleaving<R>(
  fresh: () => Promise<R>,
  x: (record: R) => Promise<unknown>,
  y: (record: R) => Promise<unknown>,
  state: (record: R) => Promise<string>,
): Promise<{ orders: string[]; failures: string[]; runs: number }> {
  const orders: string[] = [];
  for (const [a, b] of [
    [x, y],
    [y, x],
  ] as const) {
    const r = await fresh();
    await a(r);
    await b(r);
    orders.push(await state(r));
  }
  const failures: string[] = [];
  let runs = 2;
  for (const [first, a, b] of [
    ['x', x, y],
    ['y', y, x],
  ] as const) {
    for (let k = 1; ; k++) {
      const r = await fresh();
      runs++;
      let error: unknown;
      const failed = (e: unknown) => {
        error = e;
      };
      const ran = await afterCall(
        k,
        () => a(r),
        () => b(r).catch(failed),
      ).catch((e: unknown) => {
        failed(e);
        return true;
      });
      if (!ran) break;
      const end = await state(r);
      if (error || !orders.includes(end))
        failures.push(`${first} first, the other after its call ${k}: ${end}${error ? ` (${(error as Error).message})` : ''}`);
    }
  }
  return { orders, failures, runs };
}

/**
 * Runs `processes` together, each database call of each waiting for its turn: `turns` says which
 * process makes how many calls in a row (Infinity: the rest of them), a process that ends
 * ending its turn. A turn of n calls lets n calls start (a process starting two at once waits
 * with the second) and ends when they have answered. Once the turns are spent, every call runs
 * at once. What each process made: its calls and how it ended. Calls are told apart by the
 * async context each process runs in; the calls a call makes inside the driver are part of it,
 * and a `find` is a call when its cursor is read whole (`toArray`).
 */
export async function inTurns(
  processes: readonly (() => Promise<unknown>)[],
  turns: readonly (readonly [process: number, calls: number])[],
): Promise<{ calls: number[]; errors: (string | null)[] }> {
  const which = new AsyncLocalStorage<number>();
  const inside = new AsyncLocalStorage<boolean>();
  const calls = processes.map(() => 0);
  const done = processes.map(() => false);
  let turn = 0;
  let started = 0;
  let answered = 0;
  let wake: () => void = () => undefined;
  let changed = new Promise<void>((r) => (wake = r));
  const advance = () => {
    turn++;
    started = 0;
    answered = 0;
    while (turn < turns.length && done[turns[turn]![0]]) turn++;
    const w = wake;
    changed = new Promise<void>((r) => (wake = r));
    w();
  };
  const scheduled = async function (this: unknown, original: (...a: unknown[]) => Promise<unknown>, args: unknown[]) {
    const p = which.getStore();
    if (p === undefined || inside.getStore()) return original.apply(this, args);
    while (turn < turns.length && (turns[turn]![0] !== p || started >= turns[turn]![1])) await changed;
    calls[p]!++;
    if (turn >= turns.length) return inside.run(true, () => original.apply(this, args));
    const mine = turn;
    started++;
    try {
      return await inside.run(true, () => original.apply(this, args));
    } finally {
      answered++;
      if (turn === mine && answered >= turns[mine]![1]) advance();
    }
  };
  const spies = [
    ...CALLS.map((method) => {
      const original = Collection.prototype[method] as (...a: unknown[]) => Promise<unknown>;
      return jest.spyOn(Collection.prototype, method).mockImplementation(function (this: Collection, ...args: unknown[]) {
        return scheduled.call(this, original, args);
      } as never);
    }),
    (() => {
      const original = FindCursor.prototype.toArray as (...a: unknown[]) => Promise<unknown>;
      return jest.spyOn(FindCursor.prototype, 'toArray').mockImplementation(function (this: FindCursor, ...args: unknown[]) {
        return scheduled.call(this, original, args);
      } as never);
    })(),
  ];
  try {
    const errors = await Promise.all(
      processes.map((run, p) =>
        which.run(p, async () => {
          try {
            await run();
            return null;
          } catch (err) {
            return (err as Error).message;
          } finally {
            done[p] = true;
            if (turn < turns.length && turns[turn]![0] === p) advance();
          }
        }),
      ),
    );
    return { calls, errors };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}
