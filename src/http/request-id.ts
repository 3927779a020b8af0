import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../log';

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a sane `X-Request-Id` or makes one, and gives the request a child logger carrying it. */
export function requestId(log: Logger): Middleware {
  return async function assignRequestId(ctx, next) {
    const given = ctx.get('X-Request-Id');
    const id = ACCEPTABLE.test(given) ? given : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = log.child({ request_id: id });
    ctx.set('X-Request-Id', id);
    await next();
  };
}
