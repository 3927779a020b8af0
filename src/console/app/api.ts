/** The REST API, as the console calls it: same origin, bearer token, DRF-shaped errors. */
import { buildQuery, type ErrorReport, errorReport, type QueryValue } from './query.js';
import * as session from './session.js';

export const API_PREFIX = '/course_access_groups/api/v1/';

/** A refusal or failure the page shows: `report` holds DRF's field errors of a 400. */
export class ApiError extends Error {
  readonly report: ErrorReport;
  constructor(
    readonly status: number,
    body: unknown,
    message: string,
  ) {
    super(message);
    this.report = errorReport(body);
  }
}

/** The session ended (401 or expiry): the sign-in page is showing; callers drop what they did. */
export class SignedOut extends Error {}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

function messageFor(status: number, body: unknown): string {
  const detail = errorReport(body).general.join(' ');
  switch (status) {
    case 400:
      return detail || 'Some fields need attention.';
    case 403:
      return `Not allowed: ${detail || 'this token may not do this.'}`;
    case 404:
      return 'Not found: it may have been deleted meanwhile.';
    case 503:
      return `The service is unavailable: ${detail || 'try again shortly.'}`;
    default:
      return detail ? `The service answered ${status}: ${detail}` : `The service answered ${status}.`;
  }
}

/**
 * One API call. Admin calls carry `organization_uuid` when platform staff (or an LMS
 * administrator of several organizations) chose an organization (`scoped: false` for the access check, whose organization is the course's).
 */
export async function call<T>(method: Method, path: string, opts: { query?: Record<string, QueryValue>; body?: unknown; scoped?: boolean } = {}): Promise<T> {
  const token = session.token();
  if (!token || session.expiredNow()) throw new SignedOut();
  const query: Record<string, QueryValue> = { ...opts.query };
  const claims = session.claims();
  if (claims && session.choosesOrganization(claims) && opts.scoped !== false) query.organization_uuid = session.organization();
  const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(API_PREFIX + path + buildQuery(query), {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
  } catch {
    throw new ApiError(0, null, 'The service cannot be reached. Check the connection and try again.');
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (res.status === 401) {
    const detail = errorReport(body).general.join(' ') || 'the token was refused';
    session.end(`The service ended your session (${detail}). Sign in again.`);
    throw new SignedOut();
  }
  if (!res.ok) throw new ApiError(res.status, body, messageFor(res.status, body));
  return body as T;
}

export const get = <T>(path: string, query?: Record<string, QueryValue>) => call<T>('GET', path, { query });
export const post = <T>(path: string, body: unknown = {}) => call<T>('POST', path, { body });
export const patch = <T>(path: string, body: unknown) => call<T>('PATCH', path, { body });
export const del = (path: string) => call<void>('DELETE', path);

/** The `count` of a list with its filters (one row fetched). */
export async function count(path: string, query: Record<string, QueryValue> = {}): Promise<number> {
  return (await get<{ count: number }>(path, { ...query, limit: 1 })).count;
}
