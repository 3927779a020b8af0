import type Router from '@koa/router';
import { deleteGroup } from '../../domain/delete-group';
import { notFound } from '../../http/errors';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { intId } from '../../http/params';
import { listQuerySchema, queryParser } from '../../http/query';
import { validator } from '../../validation';
import { groupsRepository } from './repository';
import { groupCreateSchema, groupPatchSchema } from './schema';

const parseCreate = validator(groupCreateSchema);
const parsePatch = validator(groupPatchSchema);
const parseListQuery = queryParser(listQuerySchema);

export function registerGroupRoutes(router: Router): void {
  const base = '/course-access-groups';

  router.get(base, async (ctx) => {
    const page = parsePage(parseListQuery(ctx.query));
    const { count, results } = await groupsRepository(ctx.state.tenant).list(page);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  router.post(base, async (ctx) => {
    const input = parseCreate(ctx.state.body);
    ctx.status = 201;
    ctx.body = await groupsRepository(ctx.state.tenant).create(input);
  });

  router.get(`${base}/:id`, async (ctx) => {
    const group = await groupsRepository(ctx.state.tenant).get(intId(ctx.params.id));
    if (!group) throw notFound();
    ctx.body = group;
  });

  router.patch(`${base}/:id`, async (ctx) => {
    const id = intId(ctx.params.id);
    const groups = groupsRepository(ctx.state.tenant);
    // As DRF: an unknown id is a 404 even when the body is also invalid.
    if (!(await groups.exists(id))) throw notFound();
    const group = await groups.update(id, parsePatch(ctx.state.body));
    if (!group) throw notFound();
    ctx.body = group;
  });

  router.delete(`${base}/:id`, async (ctx) => {
    if (!(await deleteGroup(ctx.state.tenant, intId(ctx.params.id)))) throw notFound();
    ctx.status = 204;
  });
}
