/**
 * The one retry loop of the service: capped exponential backoff, used wherever something must
 * eventually succeed (start-up against a database or broker that is not there yet, an event
 * handler whose database went away, the change record after a write).
 */

/** The pause after failure n is `initialMs × 2^(n-1)`, never more than `maxMs`. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

export const backoffDelay = (attempt: number, backoff: Backoff): number => Math.min(backoff.initialMs * 2 ** (attempt - 1), backoff.maxMs);

export interface RetryOptions {
  backoff: Backoff;
  /** Called after each failure with the pause to come (to log, count); false gives up and throws the error. */
  onFailure?: (err: unknown, attempt: number, delayMs: number) => boolean | void;
  /** Waits before the next try; resolving false stops retrying and throws the last error. Default: a timer that does not keep the process alive. */
  wait?: (ms: number) => Promise<boolean>;
}

const sleep = (ms: number) => new Promise<boolean>((resolve) => setTimeout(() => resolve(true), ms).unref());

/** Runs `operation` until it succeeds, or until `onFailure` or `wait` says to stop. */
export async function retry<T>(operation: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (err) {
      const delay = backoffDelay(attempt, opts.backoff);
      if (opts.onFailure?.(err, attempt, delay) === false) throw err;
      if (!(await (opts.wait ?? sleep)(delay))) throw err;
    }
  }
}
