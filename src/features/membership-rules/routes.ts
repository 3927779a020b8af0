import type Router from '@koa/router';
import { notFound } from '../../http/errors';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { intId } from '../../http/params';
import { listQuerySchema, queryParser } from '../../http/query';
import { validator } from '../../validation';
import { rulesRepository } from './repository';
import { ruleCreateSchema, rulePatchSchema } from './schema';

const parseCreate = validator(ruleCreateSchema);
const parsePatch = validator(rulePatchSchema);
const parseListQuery = queryParser(listQuerySchema);

export function registerRuleRoutes(router: Router): void {
  const base = '/membership-rules';

  router.get(base, async (ctx) => {
    const page = parsePage(parseListQuery(ctx.query));
    const { count, results } = await rulesRepository(ctx.state.tenant).list(page);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  router.post(base, async (ctx) => {
    const input = parseCreate(ctx.state.body);
    ctx.body = await rulesRepository(ctx.state.tenant).create(input);
    ctx.status = 201;
  });

  router.get(`${base}/:id`, async (ctx) => {
    const rule = await rulesRepository(ctx.state.tenant).get(intId(ctx.params.id));
    if (!rule) throw notFound();
    ctx.body = rule;
  });

  router.patch(`${base}/:id`, async (ctx) => {
    const id = intId(ctx.params.id);
    const rules = rulesRepository(ctx.state.tenant);
    // As DRF: an unknown id is a 404 even when the body is also invalid.
    if (!(await rules.exists(id))) throw notFound();
    const rule = await rules.update(id, parsePatch(ctx.state.body));
    if (!rule) throw notFound();
    ctx.body = rule;
  });

  router.delete(`${base}/:id`, async (ctx) => {
    if (!(await rulesRepository(ctx.state.tenant).delete(intId(ctx.params.id)))) throw notFound();
    ctx.status = 204;
  });
}
