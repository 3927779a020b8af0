import type Router from '@koa/router';
import type { Context } from 'koa';
import { decide } from '../../domain/access-decisions';
import { NotFound } from '../../errors';
import { isService, type Principal } from '../../http/auth';
import { forbidden } from '../../http/error-responses';
import type { AppDeps } from '../../http/feature';
import { type Infer, validator } from '../../validation';
import { createFactsCache } from './cache';
import { accessQueries, type OrgFilter } from './queries';
import { accessQuerySchema, batchRequestSchema, type batchResponseSchema } from './schema';

const parseQuery = validator(accessQuerySchema);
const parseBatch = validator(batchRequestSchema);

/**
 * The callers of access decisions (docs/api.md): the LMS (`service`) and platform staff for any organization's courses, a
 * site administrator for their own organization's only (another's behave as unknown). Anyone
 * else is refused before their input is looked at, as DRF checks permissions first.
 */
function callerScope(principal: Principal): OrgFilter {
  if (isService(principal) || principal.isStaff) return () => true;
  const own = principal.org;
  if (principal.roles.includes('site_admin') && own !== null) return (org) => org === own;
  if (principal.administeredOrgs.length > 0) return (org) => principal.administeredOrgs.includes(org);
  throw forbidden();
}

/**
 * The query string as a plain object for the schema: a repeated parameter counts once (its
 * last value, as Django's QueryDict.get), and an integer-looking `user_id` becomes a number so
 * the schema, which says integer for the OpenAPI document too, can check it.
 */
function queryObject(ctx: Context): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(ctx.query)) out[name] = Array.isArray(value) ? value[value.length - 1] : value;
  if (typeof out.user_id === 'string' && /^-?\d{1,16}$/.test(out.user_id)) out.user_id = Number(out.user_id);
  return out;
}

export function registerAccessRoutes(router: Router, deps: AppDeps): void {
  const cache = createFactsCache(deps.db, { enabled: deps.config.ACCESS_CACHE === 'on' });
  const access = accessQueries(deps.db, cache);

  router.get('/access', async (ctx) => {
    const mayAsk = callerScope(ctx.state.principal);
    const query = parseQuery(queryObject(ctx));
    const facts = (await access.facts([query.course_id], query.user_id ?? null, mayAsk)).get(query.course_id);
    if (!facts) throw new NotFound();
    ctx.body = decide(facts);
  });

  router.post('/access/batch', async (ctx) => {
    const mayAsk = callerScope(ctx.state.principal);
    const input = parseBatch(ctx.state.body);
    const facts = await access.facts(input.course_ids, input.user_id ?? null, mayAsk);
    const body: Infer<typeof batchResponseSchema> = {
      results: input.course_ids.map((courseId) => {
        const known = facts.get(courseId);
        return { course_id: courseId, ...(known ? decide(known) : { allowed: false, reason: 'unknown_course' as const }) };
      }),
    };
    ctx.body = body;
  });
}
