import { hkdfSync, timingSafeEqual } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';

/**
 * What the login route must hand to the callback across the LMS round trip, kept in the browser
 * rather than in a session store so that any replica can finish the flow: one short-lived
 * cookie, encrypted and authenticated (JWE, dir + A256GCM) with a key derived from the client
 * secret, so it can be neither read (the PKCE verifier stays secret) nor forged.
 */
export interface SignInAttempt {
  /** The OAuth2 `state` sent to the LMS and expected back. */
  state: string;
  /** The PKCE `code_verifier` whose S256 challenge went to the LMS. */
  verifier: string;
  /** The console route (`#/groups/3`) to return to. */
  route: string;
  /** The secret the tab that started the attempt keeps (sessionStorage): only it can finish the sign-in. */
  tab: string;
  /** When the attempt ends (seconds since the epoch). */
  exp: number;
}

export const STATE_LIFETIME_SECONDS = 600;
/**
 * One cookie for every attempt of a browser, holding at most this many (the newest): two tabs
 * signing in at once, or a renewal beside a sign-in, do not undo each other, and abandoned
 * attempts replace each other instead of piling up cookies until the headers are too large.
 */
export const MAX_ATTEMPTS = 3;
export const ATTEMPTS_COOKIE = 'cag_console_signin';
/** The finished sign-in waiting for its tab (the console's token, sealed): two minutes. */
export const FINISH_COOKIE = 'cag_console_signin_done';
export const FINISH_LIFETIME_SECONDS = 120;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A key of its own per use, all derived from the client secret. */
export function derivedKey(clientSecret: string, use: 'state cookie' | 'finish cookie' | 'console token'): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', clientSecret, 'course-access-groups', `console sign-in ${use}`, 32));
}

async function seal(key: Uint8Array, payload: Record<string, unknown>, lifetime: number): Promise<string> {
  return new EncryptJWT(payload)
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
    .setIssuedAt()
    .setExpirationTime(nowSeconds() + lifetime)
    .encrypt(key);
}

async function open(key: Uint8Array, sealed: string | undefined): Promise<Record<string, unknown> | null> {
  if (!sealed) return null;
  try {
    return (await jwtDecrypt(sealed, key, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] })).payload;
  } catch {
    return null;
  }
}

export const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** The unexpired attempts a cookie holds (none when it is missing, forged or expired). */
export async function openAttempts(key: Uint8Array, sealed: string | undefined): Promise<SignInAttempt[]> {
  const payload = await open(key, sealed);
  const list = Array.isArray(payload?.a) ? (payload.a as unknown[]) : [];
  const now = nowSeconds();
  return list.flatMap((a) => {
    if (a === null || typeof a !== 'object') return [];
    const { s, v, r, t, e } = a as Record<string, unknown>;
    if (typeof s !== 'string' || typeof v !== 'string' || typeof r !== 'string' || typeof t !== 'string' || typeof e !== 'number') return [];
    return e > now ? [{ state: s, verifier: v, route: r, tab: t, exp: e }] : [];
  });
}

/** The cookie's value for `attempts`, newest first, at most MAX_ATTEMPTS of them. */
export function sealAttempts(key: Uint8Array, attempts: readonly SignInAttempt[]): Promise<string> {
  const kept = attempts.slice(0, MAX_ATTEMPTS);
  const last = Math.max(...kept.map((a) => a.exp)) - nowSeconds();
  return seal(key, { a: kept.map((a) => ({ s: a.state, v: a.verifier, r: a.route, t: a.tab, e: a.exp })) }, Math.max(last, 1));
}

export const newAttempt = (o: Omit<SignInAttempt, 'exp'>): SignInAttempt => ({ ...o, exp: nowSeconds() + STATE_LIFETIME_SECONDS });

/** The attempt of `state` (compared in constant time), or undefined. */
export const attemptOf = (attempts: readonly SignInAttempt[], state: string) => attempts.find((a) => sameSecret(a.state, state));

/** A finished sign-in: the console's token, for the tab holding `tab` only. */
export function sealFinish(key: Uint8Array, o: { token: string; tab: string; route: string }): Promise<string> {
  return seal(key, { k: o.token, t: o.tab, r: o.route }, FINISH_LIFETIME_SECONDS);
}

export async function openFinish(key: Uint8Array, sealed: string | undefined, tab: string): Promise<{ token: string; route: string } | null> {
  const payload = await open(key, sealed);
  if (!payload) return null;
  const { k, t, r } = payload;
  if (typeof k !== 'string' || typeof t !== 'string' || typeof r !== 'string' || !sameSecret(t, tab)) return null;
  return { token: k, route: r };
}
