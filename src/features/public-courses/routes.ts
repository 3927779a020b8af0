import type Router from '@koa/router';
import { notFound } from '../../http/errors';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { intId } from '../../http/params';
import { listQuerySchema, queryParser } from '../../http/query';
import { validator } from '../../validation';
import { publicCoursesRepository } from './repository';
import { publicCourseCreateSchema } from './schema';

const parseCreate = validator(publicCourseCreateSchema);
const parseListQuery = queryParser(listQuerySchema);

/** Create, list, retrieve and delete: a public record has nothing to PATCH (405). */
export function registerPublicCourseRoutes(router: Router): void {
  const base = '/public-courses';

  router.get(base, async (ctx) => {
    const page = parsePage(parseListQuery(ctx.query));
    const { count, results } = await publicCoursesRepository(ctx.state.tenant).list(page);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  router.post(base, async (ctx) => {
    const input = parseCreate(ctx.state.body);
    ctx.body = await publicCoursesRepository(ctx.state.tenant).create(input);
    ctx.status = 201;
  });

  router.get(`${base}/:id`, async (ctx) => {
    const record = await publicCoursesRepository(ctx.state.tenant).get(intId(ctx.params.id));
    if (!record) throw notFound();
    ctx.body = record;
  });

  router.delete(`${base}/:id`, async (ctx) => {
    if (!(await publicCoursesRepository(ctx.state.tenant).delete(intId(ctx.params.id)))) throw notFound();
    ctx.status = 204;
  });
}
