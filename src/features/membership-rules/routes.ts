import type Router from '@koa/router';
import { applyRule, createRule, deleteRule, updateRule } from '../../domain/membership-rules';
import { NotFound } from '../../errors';
import { intId } from '../../http/params';
import { queryParser } from '../../http/query';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { ruleQueries } from './queries';
import { ruleCreateSchema, ruleListQuerySchema, rulePatchSchema } from './schema';

const parseCreate = validator(ruleCreateSchema);
const parseListQuery = queryParser(ruleListQuerySchema);
const parsePatch = validator(rulePatchSchema);

export function registerRuleRoutes(router: Router): void {
  resourceRoutes(router, '/membership-rules', {
    queries: ruleQueries,
    query: parseListQuery,
    create: { parse: parseCreate, write: createRule },
    patch: { parse: parsePatch, write: updateRule },
    remove: deleteRule,
  });

  // An action, not an edit: the body is ignored (none, or `{}`), the answer is how many joined.
  router.post('/membership-rules/:id/apply', async (ctx) => {
    const created = await applyRule(ctx.state.tenant, intId(ctx.params.id));
    if (created === null) throw new NotFound();
    ctx.body = { created };
  });
}
