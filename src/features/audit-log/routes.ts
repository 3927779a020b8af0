import type Router from '@koa/router';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { queryParser } from '../../http/query';
import { auditLogQueries } from './queries';
import { auditListQuerySchema } from './schema';

const parseListQuery = queryParser(auditListQuerySchema);

/** Read-only and list-only: records are written by the change relay, never through the API. */
export function registerAuditLogRoutes(router: Router): void {
  router.get('/audit-log', async (ctx) => {
    const query = parseListQuery(ctx.query);
    const page = parsePage(query);
    const { count, results } = await auditLogQueries(ctx.state.tenant).list(page, query);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });
}
