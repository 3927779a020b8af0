/**
 * The signed-in token, kept in sessionStorage: it lasts as long as the tab and is never sent
 * to the server in a URL (only in the Authorization header of API calls).
 */
import { type Claims, isExpired, parseToken } from './token.js';

const TOKEN_KEY = 'cag-console-token';
const ORG_KEY = 'cag-console-organization';

type EndListener = (message: string) => void;
const listeners: EndListener[] = [];
let expiryTimer: number | undefined;

const now = () => Date.now() / 1000;

function current(): { token: string; claims: Claims } | null {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) return null;
  const parsed = parseToken(token);
  return parsed.ok ? { token: parsed.token, claims: parsed.claims } : null;
}

function armExpiry(claims: Claims): void {
  window.clearTimeout(expiryTimer);
  // setTimeout's limit is 2^31 ms (about 24 days); a later expiry is checked on each call instead.
  const ms = Math.min((claims.exp - now()) * 1000, 2 ** 31 - 1);
  expiryTimer = window.setTimeout(() => end(expiredMessage(claims)), Math.max(ms, 0));
}

const expiredMessage = (claims: Claims) => `Your token expired at ${new Date(claims.exp * 1000).toLocaleString()}. Sign in again with a new one.`;

export function token(): string | null {
  return current()?.token ?? null;
}

export function claims(): Claims | null {
  return current()?.claims ?? null;
}

/** Stores a token; returns why it cannot be used, or null. */
export function start(raw: string): string | null {
  const parsed = parseToken(raw);
  if (!parsed.ok) return parsed.error;
  if (isExpired(parsed.claims, now())) return expiredMessage(parsed.claims);
  sessionStorage.setItem(TOKEN_KEY, parsed.token);
  if (!choosesOrganization(parsed.claims)) sessionStorage.removeItem(ORG_KEY);
  armExpiry(parsed.claims);
  return null;
}

/** On page load: the stored token if it is still valid (else it is dropped, with the reason). */
export function resume(): { ok: true } | { ok: false; message: string | null } {
  const raw = sessionStorage.getItem(TOKEN_KEY);
  if (!raw) return { ok: false, message: null };
  const problem = start(raw);
  if (problem) {
    sessionStorage.removeItem(TOKEN_KEY);
    return { ok: false, message: problem };
  }
  return { ok: true };
}

/** Forgets the token and tells the page, which shows the sign-in form with `message`. */
export function end(message: string): void {
  window.clearTimeout(expiryTimer);
  sessionStorage.removeItem(TOKEN_KEY);
  for (const listener of listeners) listener(message);
}

export function onEnd(listener: EndListener): void {
  listeners.push(listener);
}

/** Checked before each call: an expired token is ended here rather than sent. */
export function expiredNow(): boolean {
  const c = claims();
  if (c && isExpired(c, now())) {
    end(expiredMessage(c));
    return true;
  }
  return false;
}

/** Platform staff, and an LMS administrator of several organizations, pick the one to work on. */
export const choosesOrganization = (c: Claims) => c.staff || c.administeredOrgs.length > 1;

/**
 * The organization the console works on: a site administrator's own (the token's `org`, or an
 * LMS token's one organization); platform staff choose one (the API's `organization_uuid`), the
 * token's `org` by default; an LMS administrator of several chooses one of theirs.
 */
export function organization(): string | null {
  const c = claims();
  if (!c) return null;
  if (!choosesOrganization(c)) return c.org;
  return sessionStorage.getItem(ORG_KEY) || c.org;
}

export function chooseOrganization(org: string): void {
  if (org) sessionStorage.setItem(ORG_KEY, org);
  else sessionStorage.removeItem(ORG_KEY);
}
