/**
 * The one retry style of the service: capped exponential backoff, forever, until a stop. The
 * consumer (a failing handler), start-up (database and broker not there yet) and the change
 * relay (database or broker down) all wait this way.
 */
export interface RetryPolicy {
  /** First pause after a failure; doubled after each further one. */
  initialMs: number;
  /** The cap of the pause. */
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { initialMs: 200, maxMs: 10000 };

/** The pause before attempt `attempt + 1`, after `attempt` failures (1-based). */
export function backoffDelay(attempt: number, policy: RetryPolicy): number {
  return Math.min(policy.initialMs * 2 ** (attempt - 1), policy.maxMs);
}

/** Waits `ms`, or less when `signal` aborts; resolves false when aborted. */
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
 * Runs `step` until it succeeds, pausing with backoff after each failure (`onFailure` says what
 * to log). Throws the last error only when `signal` aborts.
 */
export async function retryUntilDone<T>(
  step: () => Promise<T>,
  opts: { policy: RetryPolicy; signal?: AbortSignal; onFailure?: (err: unknown, attempt: number, delayMs: number) => void },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      const delay = backoffDelay(attempt, opts.policy);
      opts.onFailure?.(err, attempt, delay);
      if (!(await pause(delay, opts.signal))) throw err;
    }
  }
}
