import { KafkaJSError } from 'kafkajs';
import { isDatabaseUnavailable, isTransientServerError } from '../src/db/driver-errors';
import { ServiceError } from '../src/errors';

/**
 * Whether a failure may pass by itself, unchanged (kafkajs's `retriable`): the consumer retries
 * such a message until it succeeds and gives any other failure EVENT_MAX_ATTEMPTS attempts before
 * the dead-letter topic.
 *
 * Retriable: a ServiceError that says so (DependencyUnavailable), the driver's "database cannot
 * be reached" errors and the server's transient ones (not primary, shutting down, write concern), and a kafkajs error that says so (a broker away while the dead-letter copy
 * is written). Causes are followed (`cause`), so a wrapper decides only when it knows: kafkajs's
 * "retries exhausted" wraps the error that may still pass. Anything else (a bug, a refusal, an
 * error nobody classified) is not.
 */
export function isRetriable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if (e instanceof ServiceError) return e.retriable;
    if (isDatabaseUnavailable(e) || isTransientServerError(e)) return true;
    if (e instanceof KafkaJSError) {
      if (e.retriable) return true;
      if (e.name !== 'KafkaJSNumberOfRetriesExceeded') return false;
    }
  }
  return false;
}

/** Anything shaped like an email address: a driver's message may quote a value (a duplicate key). */
const EMAIL_LIKE = /[^\s@"'`<>()[\]{},;:]+@[^\s@"'`<>()[\]{},;:]+/g;
const scrub = (text: string | undefined) => text?.replace(EMAIL_LIKE, '[redacted]');

/** An error as logs and dead-letter headers show it: name, message, code and stack, no email. */
export function describeError(err: unknown): { name?: string; message: string; code?: unknown; stack?: string } {
  if (!(err instanceof Error)) return { message: scrub(String(err))! };
  return { name: err.name, message: scrub(err.message)!, code: (err as { code?: unknown }).code, stack: scrub(err.stack) };
}
