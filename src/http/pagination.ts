import type { Context } from 'koa';
import { validationError } from './errors';

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

function nonNegativeInteger(name: string, raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) {
    throw validationError({ [name]: ['A valid non-negative integer is required.'] });
  }
  return Number(raw);
}

/**
 * DRF's LimitOffsetPagination with the contract's strictness: a value that is not a
 * non-negative integer is a 400 (DRF would ignore it). As in DRF, `limit=0` means the default
 * and a limit past the maximum is capped at it.
 */
export function parsePage(query: Record<string, unknown>): Page {
  const limit = nonNegativeInteger('limit', query.limit);
  const offset = nonNegativeInteger('offset', query.offset) ?? 0;
  return { limit: !limit ? DEFAULT_LIMIT : Math.min(limit, MAX_LIMIT), offset };
}

/** Absolute `next`/`previous` links that keep every other query parameter, as DRF builds them. */
export function pageEnvelope<T>(ctx: Context, page: Page, count: number, results: T[]): PageEnvelope<T> {
  const link = (offset: number | null) => {
    const params = new URLSearchParams(ctx.querystring);
    params.set('limit', String(page.limit));
    if (offset === null || offset <= 0) params.delete('offset');
    else params.set('offset', String(offset));
    return `${ctx.origin}${ctx.path}?${params.toString()}`;
  };
  const next = page.offset + page.limit < count ? link(page.offset + page.limit) : null;
  const previous = page.offset > 0 ? link(page.offset - page.limit) : null;
  return { count, next, previous, results };
}
