import type Router from '@koa/router';
import { notFound } from '../../http/errors';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { queryParser } from '../../http/query';
import { coursesRepository } from './repository';
import { courseListQuerySchema } from './schema';

const parseListQuery = queryParser(courseListQuerySchema);

export function registerCourseRoutes(router: Router): void {
  const base = '/courses';

  router.get(base, async (ctx) => {
    const query = parseListQuery(ctx.query);
    const page = parsePage(query);
    const { count, results } = await coursesRepository(ctx.state.tenant).list(query, page);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  // The router hands the key over percent-decoded, so `course-v1%3AORG%2BNUM%2BRUN` works too.
  router.get(`${base}/:id`, async (ctx) => {
    const course = await coursesRepository(ctx.state.tenant).get(ctx.params.id!);
    if (!course) throw notFound();
    ctx.body = course;
  });
}
