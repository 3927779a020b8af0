import type { Middleware } from 'koa';
import { isDatabaseUnavailable, isDuplicateKey } from '../db/driver-errors';
import { Invalid, NotFound, ServiceError } from '../errors';
import type { Logger } from '../log';

/** An error with a status and a body in the contract's shape (DRF's): what only HTTP can refuse (401, 403, 413, 415, a malformed body). */
export class HttpError extends ServiceError {
  /** A 503 (a dependency down) may pass; anything else the caller must change. */
  readonly retriable: boolean;
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.detail === 'string' ? body.detail : `HTTP ${status}`);
    this.retriable = status === 503;
  }
}

export const unauthorized = (detail = 'Authentication credentials were not provided.') => new HttpError(401, { detail }, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (detail = 'You do not have permission to perform this action.') => new HttpError(403, { detail });
export const serviceUnavailable = (detail = 'The database is unavailable; try again shortly.') => new HttpError(503, { detail }, { 'Retry-After': '1' });

/**
 * The one place an error becomes a response in the contract's shape: the service's own errors
 * (src/errors.ts) by their meaning, the database's by their kind. Anything else is a bug: a 500
 * with a fixed body, its stack in the log, never to the client.
 */
export function toHttpError(err: unknown, log: Logger): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof NotFound) return new HttpError(404, { detail: 'Not found.' });
  // A 400 in DRF's validation shape: `{"field": ["message"]}` or `{"non_field_errors": [...]}`.
  if (err instanceof Invalid) return new HttpError(400, err.fields);
  if (isDuplicateKey(err)) return new HttpError(400, { non_field_errors: ['This record already exists.'] });
  if (isDatabaseUnavailable(err)) {
    log.warn({ err: { name: (err as Error).name } }, 'database unavailable');
    return serviceUnavailable();
  }
  log.error({ err }, 'unhandled error');
  return new HttpError(500, { detail: 'Internal server error.' });
}

/** Turns every error thrown below it into its response (toHttpError). */
export function errorMapping(log: Logger): Middleware {
  return async function mapErrors(ctx, next) {
    try {
      await next();
    } catch (err) {
      const error = toHttpError(err, ctx.state.log ?? log);
      ctx.status = error.status;
      ctx.body = error.body;
      ctx.set(error.headers);
    }
  };
}
