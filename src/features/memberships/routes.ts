import type Router from '@koa/router';
import { notFound } from '../../http/errors';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { intId } from '../../http/params';
import { listQuerySchema, queryParser } from '../../http/query';
import { validator } from '../../validation';
import { membershipsRepository } from './repository';
import { membershipCreateSchema, membershipPatchSchema } from './schema';

const parseCreate = validator(membershipCreateSchema);
const parsePatch = validator(membershipPatchSchema);
const parseListQuery = queryParser(listQuerySchema);

export function registerMembershipRoutes(router: Router): void {
  const base = '/memberships';

  router.get(base, async (ctx) => {
    const page = parsePage(parseListQuery(ctx.query));
    const { count, results } = await membershipsRepository(ctx.state.tenant).list(page);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  router.post(base, async (ctx) => {
    const input = parseCreate(ctx.state.body);
    ctx.body = await membershipsRepository(ctx.state.tenant).create(input);
    ctx.status = 201;
  });

  router.get(`${base}/:id`, async (ctx) => {
    const membership = await membershipsRepository(ctx.state.tenant).get(intId(ctx.params.id));
    if (!membership) throw notFound();
    ctx.body = membership;
  });

  router.patch(`${base}/:id`, async (ctx) => {
    const id = intId(ctx.params.id);
    const memberships = membershipsRepository(ctx.state.tenant);
    // As DRF: an unknown id is a 404 even when the body is also invalid.
    if (!(await memberships.exists(id))) throw notFound();
    const membership = await memberships.update(id, parsePatch(ctx.state.body));
    if (!membership) throw notFound();
    ctx.body = membership;
  });

  router.delete(`${base}/:id`, async (ctx) => {
    if (!(await membershipsRepository(ctx.state.tenant).delete(intId(ctx.params.id)))) throw notFound();
    ctx.status = 204;
  });
}
