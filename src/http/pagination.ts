import type { Context } from 'koa';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 1000;

export interface Page {
  limit: number;
  offset: number;
}

export interface PageEnvelope<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/**
 * DRF's LimitOffsetPagination: `limit=0` means the default and a limit past the maximum is capped
 * at it. The values come validated by the list's query schema (src/http/query.ts), where a value
 * that is not a non-negative integer is a 400 (DRF would ignore it).
 */
export function parsePage(query: { limit?: string; offset?: string }): Page {
  const limit = query.limit === undefined ? 0 : Number(query.limit);
  return { limit: !limit ? DEFAULT_LIMIT : Math.min(limit, MAX_LIMIT), offset: query.offset === undefined ? 0 : Number(query.offset) };
}

/**
 * Absolute `next`/`previous` links that keep every other query parameter, as DRF builds them.
 * (Koa 3's `ctx.origin` is the `Origin` header, not the request's origin: protocol and host are
 * read instead, honouring `X-Forwarded-*` as the app runs with `proxy: true`.)
 */
export function pageEnvelope<T>(ctx: Context, page: Page, count: number, results: T[]): PageEnvelope<T> {
  const origin = `${ctx.protocol}://${ctx.host}`;
  const link = (offset: number | null) => {
    const params = new URLSearchParams(ctx.querystring);
    params.set('limit', String(page.limit));
    if (offset === null || offset <= 0) params.delete('offset');
    else params.set('offset', String(offset));
    params.sort(); // DRF sorts the parameters of its links too
    return `${origin}${ctx.path}?${params.toString()}`;
  };
  const next = page.offset + page.limit < count ? link(page.offset + page.limit) : null;
  const previous = page.offset > 0 ? link(page.offset - page.limit) : null;
  return { count, next, previous, results };
}
