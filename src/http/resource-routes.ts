import type { ParsedUrlQuery } from 'node:querystring';
import type Router from '@koa/router';
import type { Page } from '../db/records';
import type { Tenant } from '../db/tenant';
import { NotFound } from '../errors';
import { pageEnvelope, parsePage } from './pagination';
import { intId } from './params';
import { listQuerySchema, queryParser } from './query';

/** What a resource's repository offers (`exists` and `update` for PATCH, `create`, `delete`). */
export interface ResourceRepository<Id, Query, Create, Patch> {
  list(page: Page, query: Query): Promise<{ count: number; results: unknown[] }>;
  get(id: Id): Promise<unknown>;
  exists?(id: Id): Promise<boolean>;
  create?(input: Create): Promise<unknown>;
  update?(id: Id, patch: Patch): Promise<unknown>;
  delete?(id: Id): Promise<boolean>;
}

const parseListQuery = queryParser(listQuerySchema);

/**
 * The routes of an admin resource, DRF's way: list (paginated, with the resource's query schema)
 * and retrieve always; create (201), PATCH (200, the whole object) and DELETE (204) when `spec`
 * gives the body's parser (or `remove`). A method a resource lacks has no route, so the router
 * answers 405 with `Allow`. An unknown id is a 404 `{"detail": "Not found."}`; so is a PATCH of
 * an unknown id even when its body is also invalid (DRF looks the object up first).
 */
export function resourceRoutes<Id, Query extends { limit?: string; offset?: string }, Create, Patch>(
  router: Router,
  base: string,
  spec: {
    repository: (tenant: Tenant) => ResourceRepository<Id, Query, Create, Patch>;
    /** The path's id (default: a positive integer; anything else is a 404). */
    id?: (raw: string | undefined) => Id;
    query?: (query: ParsedUrlQuery) => Query;
    create?: (body: unknown) => Create;
    patch?: (body: unknown) => Patch;
    /** Whether the resource can be deleted. */
    remove?: boolean;
  },
): void {
  const id = spec.id ?? (intId as unknown as (raw: string | undefined) => Id);
  const parseQuery = spec.query ?? (parseListQuery as unknown as (query: ParsedUrlQuery) => Query);
  const repository = (ctx: { state: { tenant: Tenant } }) => spec.repository(ctx.state.tenant);

  router.get(base, async (ctx) => {
    const query = parseQuery(ctx.query);
    const page = parsePage(query);
    const { count, results } = await repository(ctx).list(page, query);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  const { create } = spec;
  if (create) {
    router.post(base, async (ctx) => {
      const input = create(ctx.state.body);
      ctx.body = await repository(ctx).create!(input);
      ctx.status = 201;
    });
  }

  router.get(`${base}/:id`, async (ctx) => {
    const item = await repository(ctx).get(id(ctx.params.id));
    if (!item) throw new NotFound();
    ctx.body = item;
  });

  const { patch } = spec;
  if (patch) {
    router.patch(`${base}/:id`, async (ctx) => {
      const key = id(ctx.params.id);
      const records = repository(ctx);
      if (!(await records.exists!(key))) throw new NotFound();
      const item = await records.update!(key, patch(ctx.state.body));
      if (!item) throw new NotFound();
      ctx.body = item;
    });
  }

  if (spec.remove) {
    router.delete(`${base}/:id`, async (ctx) => {
      if (!(await repository(ctx).delete!(id(ctx.params.id)))) throw new NotFound();
      ctx.status = 204;
    });
  }
}
