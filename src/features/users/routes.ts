import type Router from '@koa/router';
import { notFound } from '../../http/errors';
import { pageEnvelope, parsePage } from '../../http/pagination';
import { intId } from '../../http/params';
import { queryParser } from '../../http/query';
import { usersRepository } from './repository';
import { userListQuerySchema } from './schema';

const parseListQuery = queryParser(userListQuerySchema);

export function registerUserRoutes(router: Router): void {
  const base = '/users';

  router.get(base, async (ctx) => {
    const query = parseListQuery(ctx.query);
    const page = parsePage(query);
    const { count, results } = await usersRepository(ctx.state.tenant).list(query, page);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  router.get(`${base}/:id`, async (ctx) => {
    const user = await usersRepository(ctx.state.tenant).get(intId(ctx.params.id));
    if (!user) throw notFound();
    ctx.body = user;
  });
}
