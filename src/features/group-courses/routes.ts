import type Router from '@koa/router';
import { notFound } from '../../http/errors';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { intId } from '../../http/params';
import { listQuerySchema, queryParser } from '../../http/query';
import { validator } from '../../validation';
import { groupCoursesRepository } from './repository';
import { groupCourseCreateSchema, groupCoursePatchSchema } from './schema';

const parseCreate = validator(groupCourseCreateSchema);
const parsePatch = validator(groupCoursePatchSchema);
const parseListQuery = queryParser(listQuerySchema);

export function registerGroupCourseRoutes(router: Router): void {
  const base = '/group-courses';

  router.get(base, async (ctx) => {
    const page = parsePage(parseListQuery(ctx.query));
    const { count, results } = await groupCoursesRepository(ctx.state.tenant).list(page);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  router.post(base, async (ctx) => {
    const input = parseCreate(ctx.state.body);
    ctx.body = await groupCoursesRepository(ctx.state.tenant).create(input);
    ctx.status = 201;
  });

  router.get(`${base}/:id`, async (ctx) => {
    const link = await groupCoursesRepository(ctx.state.tenant).get(intId(ctx.params.id));
    if (!link) throw notFound();
    ctx.body = link;
  });

  router.patch(`${base}/:id`, async (ctx) => {
    const id = intId(ctx.params.id);
    const links = groupCoursesRepository(ctx.state.tenant);
    // As DRF: an unknown id is a 404 even when the body is also invalid.
    if (!(await links.exists(id))) throw notFound();
    const link = await links.update(id, parsePatch(ctx.state.body));
    if (!link) throw notFound();
    ctx.body = link;
  });

  router.delete(`${base}/:id`, async (ctx) => {
    if (!(await groupCoursesRepository(ctx.state.tenant).delete(intId(ctx.params.id)))) throw notFound();
    ctx.status = 204;
  });
}
