import { AsyncLocalStorage } from 'node:async_hooks';
import { Collection } from 'mongodb';

/** A point a request stops at until released; `reached` resolves when it gets there. */
export function gate() {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  const released = new Promise<void>((r) => (release = r));
  const stop = () => {
    reach();
    return released;
  };
  return { reached, release, stop };
}
export type Gate = ReturnType<typeof gate>;

const CALLS = ['findOne', 'insertOne', 'updateOne', 'deleteMany', 'findOneAndUpdate', 'findOneAndDelete'] as const;
type Method = (typeof CALLS)[number];

/** Where a named request stops: before or after the n-th driver call of `method` it makes (on `collection`, when given). */
export interface Stop {
  who: string;
  method: Method;
  collection?: string;
  n: number;
  when: 'before' | 'after';
  g: Gate;
}

/**
 * Runs `body` with stops on the driver calls of named requests (`as(name, fn)` runs fn as that
 * request; requests are told apart by async context).
 */
export async function withStops<T>(stops: Stop[], body: (as: <R>(who: string, fn: () => Promise<R>) => Promise<R>) => Promise<T>): Promise<T> {
  const who = new AsyncLocalStorage<string>();
  const seen = new Map<Stop, number>();
  const spies = CALLS.map((method) => {
    const original = Collection.prototype[method] as (...a: unknown[]) => Promise<unknown>;
    return jest.spyOn(Collection.prototype, method).mockImplementation(async function (this: Collection, ...args: unknown[]) {
      const name = who.getStore();
      if (name === undefined) return original.apply(this, args);
      // Every stop at this call: a call may have one before it and one after it.
      const here: Stop[] = [];
      for (const s of stops) {
        if (s.who !== name || s.method !== method || (s.collection !== undefined && s.collection !== this.collectionName)) continue;
        const n = (seen.get(s) ?? 0) + 1;
        seen.set(s, n);
        if (n === s.n) here.push(s);
      }
      for (const s of here) if (s.when === 'before') await s.g.stop();
      const result = await original.apply(this, args);
      for (const s of here) if (s.when === 'after') await s.g.stop();
      return result;
    } as never);
  });
  try {
    return await body((name, fn) => who.run(name, fn));
  } finally {
    for (const s of spies) s.mockRestore();
  }
}
