/**
 * The signed-in token, kept in sessionStorage: it lasts as long as the tab and is never sent
 * to the server in a URL (only in the Authorization header of API calls). A token from the
 * sign-in through the LMS is renewed through it before it expires (renewalDelaySeconds).
 */
import { type Claims, isExpired, parseToken, renewalDelaySeconds } from './token.js';

const TOKEN_KEY = 'cag-console-token';
const ORG_KEY = 'cag-console-organization';
/** 'lms' when the token came from the sign-in through the LMS; when it was received (ms, this browser's clock). */
const VIA_KEY = 'cag-console-via';
const RECEIVED_KEY = 'cag-console-received';

type EndListener = (message: string) => void;
const listeners: EndListener[] = [];
let expiryTimer: number | undefined;
let renewalTimer: number | undefined;
let renew: (() => void) | null = null;

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

function armRenewal(claims: Claims): void {
  window.clearTimeout(renewalTimer);
  if (!renew || sessionStorage.getItem(VIA_KEY) !== 'lms') return;
  const receivedAt = Number(sessionStorage.getItem(RECEIVED_KEY)) / 1000 || now();
  const ms = Math.min((receivedAt + renewalDelaySeconds(claims, receivedAt) - now()) * 1000, 2 ** 31 - 1);
  const due = renew;
  renewalTimer = window.setTimeout(() => due(), Math.max(ms, 0));
}

const expiredMessage = (claims: Claims) => `Your token expired at ${new Date(claims.exp * 1000).toLocaleString()}. Sign in again with a new one.`;

export function token(): string | null {
  return current()?.token ?? null;
}

export function claims(): Claims | null {
  return current()?.claims ?? null;
}

/** Whether the token came from the sign-in through the LMS (renewed, and signed out of the LMS too). */
export const viaLms = () => sessionStorage.getItem(VIA_KEY) === 'lms';

/** Stores a token, pasted or linked (`via: 'lms'` from the sign-in through the LMS); returns why it cannot be used, or null. */
export function start(raw: string, via: 'lms' | null = null): string | null {
  const problem = adopt(raw, via);
  if (problem === null) armRenewal(claims()!);
  return problem;
}

function adopt(raw: string, via: 'lms' | null | 'unchanged'): string | null {
  const parsed = parseToken(raw);
  if (!parsed.ok) return parsed.error;
  if (isExpired(parsed.claims, now())) return expiredMessage(parsed.claims);
  sessionStorage.setItem(TOKEN_KEY, parsed.token);
  if (via === 'lms') {
    sessionStorage.setItem(VIA_KEY, 'lms');
    sessionStorage.setItem(RECEIVED_KEY, String(Date.now()));
  } else if (via === null) {
    sessionStorage.removeItem(VIA_KEY);
    sessionStorage.removeItem(RECEIVED_KEY);
  }
  if (!choosesOrganization(parsed.claims)) sessionStorage.removeItem(ORG_KEY);
  armExpiry(parsed.claims);
  return null;
}

/** On page load: the stored token if it is still valid (else it is dropped, with the reason). */
export function resume(): { ok: true } | { ok: false; message: string | null } {
  const raw = sessionStorage.getItem(TOKEN_KEY);
  if (!raw) return { ok: false, message: null };
  const problem = adopt(raw, 'unchanged');
  if (problem) {
    sessionStorage.removeItem(TOKEN_KEY);
    return { ok: false, message: problem };
  }
  armRenewal(claims()!);
  return { ok: true };
}

/**
 * How a token from the LMS's sign-in is renewed (the page sends the browser through it again),
 * set once the page knows the service offers that sign-in; arms it for the current token.
 */
export function onRenewalDue(action: () => void): void {
  renew = action;
  const c = claims();
  if (c) armRenewal(c);
}

/** Forgets the token and tells the page, which shows the sign-in form with `message`. */
export function end(message: string): void {
  window.clearTimeout(expiryTimer);
  window.clearTimeout(renewalTimer);
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(VIA_KEY);
  sessionStorage.removeItem(RECEIVED_KEY);
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
