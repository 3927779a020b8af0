/**
 * The one retry policy of the service: capped exponential backoff, used wherever something must
 * eventually succeed: start-up against a database or broker that is not there yet, the change
 * record after a write, the change relay while the database or broker is down (this loop), and
 * an event whose handler failed (the consumer pauses its partition for `backoffDelay`).
 */

/** The pause after failure n is `initialMs × 2^(n-1)`, never more than `maxMs`. */
export interface RetryPolicy {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { initialMs: 200, maxMs: 10000 };

/** A database or broker that is not up yet (start-up, `cag upgrade`) is waited for from 0.5 s up to 10 s between tries. */
export const STARTUP_RETRY: RetryPolicy = { initialMs: 500, maxMs: 10000 };

export const backoffDelay = (attempt: number, policy: RetryPolicy): number => Math.min(policy.initialMs * 2 ** (attempt - 1), policy.maxMs);

/** Waits `ms`, or less when `signal` aborts; resolves false when aborted. Does not keep the process alive. */
export function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(value);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    timer.unref();
    signal?.addEventListener('abort', onAbort);
  });
}

/**
 * Resolves as `promise` does, or with `fallback` once `ms` have passed: bounds the wait for an
 * operation that cannot be cancelled (the operation itself goes on). Does not keep the process alive.
 */
export function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

export interface RetryOptions {
  policy: RetryPolicy;
  /** Stops the retries: the last error is thrown. */
  signal?: AbortSignal;
  /** Called after each failure with the pause to come (to log, count); false gives up and throws the error. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a callback that only logs returns nothing, and that means go on
  onFailure?: (err: unknown, attempt: number, delayMs: number) => boolean | void;
  /** Waits before the next try; resolving false stops retrying and throws the last error. Default: `pause`. */
  wait?: (ms: number) => Promise<boolean>;
}

/** Runs `operation` until it succeeds, or until the signal, `onFailure` or `wait` says to stop. */
export async function retry<T>(operation: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      const delay = backoffDelay(attempt, opts.policy);
      if (opts.onFailure?.(err, attempt, delay) === false) throw err;
      if (!(await (opts.wait ?? ((ms) => pause(ms, opts.signal)))(delay))) throw err;
    }
  }
}
