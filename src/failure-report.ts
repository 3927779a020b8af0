import type { Logger } from './log';

/** How a failure reads when it names a setting to fix (src/kafka-security.ts's describeKafkaFailure). */
export type DescribeFailure = (err: unknown) => { reason: string; setting: string | null } | null;

/** How often a failure that keeps naming the same setting is said again at warn level. */
export const REPEAT_MS = 60_000;

/**
 * The `onFailure` of a retry loop waiting for a dependency. A failure that names a setting to fix
 * (a refused password, an untrusted certificate) is one error line when it starts or changes,
 * then a warn line at most every `repeatMs` while it lasts (every retry in between at debug): said
 * once only, it scrolls out of sight while the pod stays unready; said at every retry, it buries
 * everything else. Any other failure (a broker or database that is down) is a warn line each time.
 */
export function failureReporter(what: string, log: Logger, describe?: DescribeFailure, repeatMs = REPEAT_MS, now: () => number = Date.now) {
  let told: string | null = null;
  let toldAt = 0;
  return (err: unknown, attempt: number, delay: number): void => {
    const described = describe?.(err);
    if (described?.setting) {
      const fields = { attempt, delay_ms: delay, setting: described.setting };
      if (described.reason !== told) {
        log.error(fields, described.reason);
        told = described.reason;
        toldAt = now();
      } else if (now() - toldAt >= repeatMs) {
        log.warn(fields, `${what} still not reachable; retrying: ${described.reason}`);
        toldAt = now();
      } else {
        log.debug({ attempt, delay_ms: delay }, `${what} not reachable yet; retrying`);
      }
      return;
    }
    told = null;
    log.warn({ attempt, delay_ms: delay, err: { name: (err as Error).name, message: (err as Error).message } }, `${what} not reachable yet; retrying`);
  };
}
