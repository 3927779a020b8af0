import type Router from '@koa/router';
import { NotFound } from '../../errors';
import { intId } from '../../http/params';
import { queryParser } from '../../http/query';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { applyRule, rulesRepository } from './repository';
import { ruleCreateSchema, ruleListQuerySchema, rulePatchSchema } from './schema';

const parseCreate = validator(ruleCreateSchema);
const parsePatch = validator(rulePatchSchema);
const parseListQuery = queryParser(ruleListQuerySchema);

export function registerRuleRoutes(router: Router): void {
  resourceRoutes(router, '/membership-rules', {
    repository: rulesRepository,
    query: parseListQuery,
    create: parseCreate,
    patch: parsePatch,
    remove: true,
  });

  // An action, not an edit: the body is ignored (none, or `{}`), the answer is how many joined.
  router.post('/membership-rules/:id/apply', async (ctx) => {
    const created = await applyRule(ctx.state.tenant, intId(ctx.params.id));
    if (created === null) throw new NotFound();
    ctx.body = { created };
  });
}
