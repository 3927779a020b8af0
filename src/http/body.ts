import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { Invalid } from '../errors';
import { HttpError } from './error-responses';

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
  let bytes: Buffer;
  try {
    bytes = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, length: ctx.get('Content-Length') || undefined });
  } catch (err) {
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') throw new HttpError(413, { detail: 'Request body is larger than 1 MiB.' });
    throw new HttpError(400, { detail: 'The request body could not be read.' });
  }
  let text: string;
  try {
    // Strict decoding: invalid UTF-8 is a parse error, as in DRF, not text silently full of U+FFFD.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new HttpError(400, { detail: 'JSON parse error - the body is not valid UTF-8.' });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, { detail: `JSON parse error - ${(err as Error).message.slice(0, 200)}` });
  }
  if (hasLoneSurrogate(value)) {
    throw new HttpError(400, { detail: 'JSON parse error - a string holds a lone surrogate (\\ud800-\\udfff), which is not text.' });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const got = value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value;
    throw new Invalid({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${got}.`] });
  }
  ctx.state.body = value;
  return next();
};

/**
 * Whether a parsed value holds a string (value or key) with an unpaired UTF-16 surrogate: JSON
 * escapes allow one, but it cannot be stored as UTF-8, so the database would keep U+FFFD while
 * the answer echoed the surrogate. An explicit stack, as bodies may nest 100,000 levels deep.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function hasLoneSurrogate(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (LONE_SURROGATE.test(key)) return true;
        stack.push(item);
      }
    }
  }
  return false;
}
