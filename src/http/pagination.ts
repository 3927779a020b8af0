import type { Context } from 'koa';
import type { Page } from '../db/records';
import { Invalid } from '../errors';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 1000;

export interface PageEnvelope<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

function nonNegativeInteger(name: string, raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) {
    throw new Invalid({ [name]: ['A valid non-negative integer is required.'] });
  }
  return Number(raw);
}

/**
 * DRF's LimitOffsetPagination: `limit=0` means the default and a limit past the maximum is capped
 * at it. Lists pass the values their query schema validated (src/http/query.ts, which reports
 * every bad parameter at once); given a raw query instead, a value that is not a non-negative
 * integer is still a 400 here (DRF would ignore it).
 */
export function parsePage(query: Record<string, unknown>): Page {
  const limit = nonNegativeInteger('limit', query.limit);
  const offset = nonNegativeInteger('offset', query.offset) ?? 0;
  return { limit: !limit ? DEFAULT_LIMIT : Math.min(limit, MAX_LIMIT), offset };
}

/**
 * Absolute `next`/`previous` links that keep every other query parameter, as DRF builds them.
 * (Koa 3's `ctx.origin` is the `Origin` header, not the request's origin: protocol and host are
 * read instead; they follow `X-Forwarded-*` only when `TRUST_PROXY` is on.)
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
