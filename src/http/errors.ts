import type { Middleware } from 'koa';
import { isDatabaseUnavailable, isDuplicateKey } from '../db/errors';
import type { Logger } from '../log';

/** An error with a status and a body in the contract's shape (DRF's). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.detail === 'string' ? body.detail : `HTTP ${status}`);
  }
}

export type FieldErrors = Record<string, string[]>;

export const notFound = () => new HttpError(404, { detail: 'Not found.' });
export const unauthorized = (detail = 'Authentication credentials were not provided.') =>
  new HttpError(401, { detail }, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (detail = 'You do not have permission to perform this action.') =>
  new HttpError(403, { detail });
/** A 400 in DRF's validation shape: `{"field": ["message"]}` or `{"non_field_errors": [...]}`. */
export const validationError = (errors: FieldErrors) => new HttpError(400, errors);
export const fieldError = (field: string, message: string) => validationError({ [field]: [message] });
/** DRF's message for a reference to a record that does not exist (in the request's organization). */
export const doesNotExist = (value: unknown) => `Invalid pk "${String(value)}" - object does not exist.`;
export const serviceUnavailable = (detail = 'The database is unavailable; try again shortly.') =>
  new HttpError(503, { detail }, { 'Retry-After': '1' });

export { isDatabaseUnavailable, isDuplicateKey };

/**
 * Turns every error into a response in the contract's shape. A thrown bug becomes a 500 with a
 * fixed body; its stack goes to the log, never to the client.
 */
export function errorMapping(log: Logger): Middleware {
  return async function mapErrors(ctx, next) {
    try {
      await next();
    } catch (err) {
      let error: HttpError;
      if (err instanceof HttpError) error = err;
      else if (isDuplicateKey(err)) error = validationError({ non_field_errors: ['This record already exists.'] });
      else if (isDatabaseUnavailable(err)) {
        error = serviceUnavailable();
        (ctx.state.log ?? log).warn({ err: { name: (err as Error).name } }, 'database unavailable');
      } else {
        error = new HttpError(500, { detail: 'Internal server error.' });
        (ctx.state.log ?? log).error({ err }, 'unhandled error');
      }
      ctx.status = error.status;
      ctx.body = error.body;
      ctx.set(error.headers);
    }
  };
}
