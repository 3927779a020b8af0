import Router from '@koa/router';
import type { AppDeps } from './feature';

/** Operational endpoints, outside the API prefix and without a token. */
export function healthRoutes(deps: AppDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const failing = await deps.notReady();
    ctx.status = failing.length === 0 ? 200 : 503;
    if (failing.length === 0) {
      ctx.body = { status: 'ready' };
      return;
    }
    const reasons = deps.notReadyReasons?.() ?? {};
    const named = failing.map((name) => (reasons[name] ? `${name} (${reasons[name]})` : name));
    ctx.body = { detail: `Not ready: ${named.join(', ')}.`, failing };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
  return router;
}
