import type { Middleware } from 'koa';
import type { Metrics } from '../metrics';

/**
 * One log line and one histogram sample per request. It records the route pattern, never the
 * raw URL: query strings can hold emails (`email_exact`) and nothing else here needs them.
 */
export function accessLog(metrics: Metrics): Middleware {
  return async function logRequest(ctx, next) {
    const start = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.httpDuration.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      ctx.state.log.info({ method: ctx.method, route, status: ctx.status, duration_ms: Math.round(seconds * 1e4) / 10 }, 'request');
    }
  };
}
