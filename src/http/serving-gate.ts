import type Koa from 'koa';
import { API_PREFIX } from './openapi';

/**
 * Until the stored data is known to be in this version's shape (an upgrade under way, or a newer
 * version's shape: src/db/upgrades.ts), the API answers 503 with the reason, as /readyz does: no
 * request reads records of a shape this process does not know, and none writes one. The OpenAPI
 * document and the console's assets need no data and are served.
 */
export const servingGate =
  (notServing: () => string | null): Koa.Middleware =>
  async (ctx, next) => {
    const reason = notServing();
    if (reason !== null && ctx.path.startsWith(API_PREFIX) && !ctx.path.startsWith(`${API_PREFIX}/openapi.json`)) {
      ctx.status = 503;
      ctx.set('Retry-After', '5');
      ctx.body = { detail: `Not ready: ${reason}.` };
      return;
    }
    await next();
  };
