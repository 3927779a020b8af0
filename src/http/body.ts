import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { HttpError, validationError } from './errors';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Parses a JSON object body for POST, PUT and PATCH into `ctx.state.body` (no body at all: `{}`), with DRF's answers:
 * 415 for another content type, 413 past 1 MiB, 400 for malformed JSON or a non-object.
 */
export const jsonBody: Middleware = async function parseJsonBody(ctx, next) {
  if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
  // No body at all (no type, no length, not chunked) is no data, as DRF's empty `request.data`:
  // `{}`, which an action such as `membership-rules/<id>/apply/` accepts and a create refuses
  // field by field. A body of any length still needs a JSON type.
  if (!ctx.get('Content-Type') && !ctx.get('Transfer-Encoding') && !ctx.request.length) {
    ctx.state.body = {};
    return next();
  }
  const type = ctx.get('Content-Type');
  if (!ctx.is('application/json')) {
    throw new HttpError(415, { detail: `Unsupported media type "${type.slice(0, 100)}" in request.` });
  }
  let text: string;
  try {
    text = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, encoding: 'utf8', length: ctx.get('Content-Length') || undefined });
  } catch (err) {
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') throw new HttpError(413, { detail: 'Request body is larger than 1 MiB.' });
    throw new HttpError(400, { detail: 'The request body could not be read.' });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, { detail: `JSON parse error - ${(err as Error).message.slice(0, 200)}` });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const got = value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value;
    throw validationError({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${got}.`] });
  }
  ctx.state.body = value;
  return next();
};
