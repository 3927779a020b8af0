import type { ParsedUrlQuery } from 'node:querystring';
import type Router from '@koa/router';
import type { Page, Tenant } from '../db/tenant';
import { NotFound } from '../errors';
import { pageEnvelope, parsePage } from './pagination';
import { intId } from './params';
import { listQuerySchema, queryParser } from './query';

/** What a resource's queries offer (reads only): a page, one record as shown, whether an id exists (for PATCH), how a written record is shown. */
export interface ResourceQueries<Id, Query, Doc> {
  list(page: Page, query: Query): Promise<{ count: number; results: unknown[] }>;
  get(id: Id): Promise<unknown>;
  exists?(id: Id): Promise<boolean>;
  show?(doc: Doc): Promise<unknown>;
}

/** A write of the resource: the body's parser and the domain function that writes what it parsed (typed by the parser alone). */
interface Write<Input, Result> {
  parse: (body: unknown) => Input;
  write: NoInfer<Result>;
}

const parseListQuery = queryParser(listQuerySchema);

/**
 * The routes of an admin resource, DRF's way: list (paginated, with the resource's query schema)
 * and retrieve always, from the resource's queries; create (201), PATCH (200, the whole object)
 * and DELETE (204) when `spec` gives the domain function that writes, whose record the queries
 * then show. A method a resource lacks has no route, so the router answers 405 with `Allow`. An
 * unknown id is a 404 `{"detail": "Not found."}`; so is a PATCH of an unknown id even when its
 * body is also invalid (DRF looks the object up first).
 */
export function resourceRoutes<Id, Query extends { limit?: string; offset?: string }, Doc, Create, Patch>(
  router: Router,
  base: string,
  spec: {
    queries: (tenant: Tenant) => ResourceQueries<Id, Query, Doc>;
    /** The path's id (default: a positive integer; anything else is a 404). */
    id?: (raw: string | undefined) => Id;
    query?: (query: ParsedUrlQuery) => Query;
    create?: Write<Create, (tenant: Tenant, input: Create) => Promise<Doc>>;
    patch?: Write<Patch, (tenant: Tenant, id: Id, patch: Patch) => Promise<Doc | null>>;
    /** Deletes the record; false when there is none. */
    remove?: (tenant: Tenant, id: Id) => Promise<boolean>;
  },
): void {
  const id = spec.id ?? (intId as unknown as (raw: string | undefined) => Id);
  const parseQuery = spec.query ?? (parseListQuery as unknown as (query: ParsedUrlQuery) => Query);
  const queries = (ctx: { state: { tenant: Tenant } }) => spec.queries(ctx.state.tenant);

  router.get(base, async (ctx) => {
    const query = parseQuery(ctx.query);
    const page = parsePage(query);
    const { count, results } = await queries(ctx).list(page, query);
    ctx.body = pageEnvelope(ctx, page, count, results);
  });

  const { create } = spec;
  if (create) {
    router.post(base, async (ctx) => {
      const input = create.parse(ctx.state.body);
      ctx.body = await queries(ctx).show!(await create.write(ctx.state.tenant, input));
      ctx.status = 201;
    });
  }

  router.get(`${base}/:id`, async (ctx) => {
    const item = await queries(ctx).get(id(ctx.params.id));
    if (!item) throw new NotFound();
    ctx.body = item;
  });

  const { patch } = spec;
  if (patch) {
    router.patch(`${base}/:id`, async (ctx) => {
      const key = id(ctx.params.id);
      const records = queries(ctx);
      if (!(await records.exists!(key))) throw new NotFound();
      const doc = await patch.write(ctx.state.tenant, key, patch.parse(ctx.state.body));
      if (!doc) throw new NotFound();
      ctx.body = await records.show!(doc);
    });
  }

  const { remove } = spec;
  if (remove) {
    router.delete(`${base}/:id`, async (ctx) => {
      if (!(await remove(ctx.state.tenant, id(ctx.params.id)))) throw new NotFound();
      ctx.status = 204;
    });
  }
}
