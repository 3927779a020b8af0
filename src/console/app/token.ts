/**
 * Reading a token's claims for display. Pure (no DOM), so unit tests run it in Node. The
 * console never trusts these: the API verifies the signature on every call.
 */

export interface Claims {
  userId: number;
  org: string | null;
  staff: boolean;
  siteAdmin: boolean;
  /** An LMS token's organizations (its `course_access_groups_admin:<org>` roles); the console works on one at a time. */
  administeredOrgs: string[];
  /** Seconds since the epoch. */
  exp: number;
  /** When the token was issued (seconds since the epoch), when it says. */
  iat?: number;
  /** Who issued it (`iss`), when it says: the LMS's own tokens are never kept as they are. */
  issuer?: string;
}

export type Parsed = { ok: true; token: string; claims: Claims } | { ok: false; error: string };

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** The role the LMS plugin puts in the LMS's JWTs (docs/api.md, the LMS's tokens). */
const LMS_ADMIN_ROLE = 'course_access_groups_admin:';

function decodeSegment(segment: string): unknown {
  const base64 = segment
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .padEnd(Math.ceil(segment.length / 4) * 4, '=');
  const binary = atob(base64);
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
}

/** A pasted or linked token: its claims, or why the service would refuse it. */
export function parseToken(raw: string): Parsed {
  const token = raw.trim().replace(/^(?:Bearer|JWT)\s+/i, '');
  if (!JWT.test(token)) return { ok: false, error: 'This is not a token: a JWT is three parts separated by dots.' };
  let payload: unknown;
  try {
    payload = decodeSegment(token.split('.')[1]!);
  } catch {
    return { ok: false, error: 'This token cannot be read: its payload is not JSON.' };
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return { ok: false, error: 'This token cannot be read: its payload is not an object.' };
  }
  const p = payload as Record<string, unknown>;
  if (typeof p.user_id !== 'number' || !Number.isSafeInteger(p.user_id)) {
    return { ok: false, error: 'This token has no user_id claim; the service refuses it.' };
  }
  if (typeof p.exp !== 'number') return { ok: false, error: 'This token has no expiry (exp); the service refuses it.' };
  const roles = Array.isArray(p.roles) ? p.roles.filter((r): r is string => typeof r === 'string') : [];
  const administeredOrgs = [
    ...new Set(roles.filter((r) => r.startsWith(LMS_ADMIN_ROLE) && r.length > LMS_ADMIN_ROLE.length).map((r) => r.slice(LMS_ADMIN_ROLE.length))),
  ];
  const org = typeof p.org === 'string' && p.org !== '' ? p.org : administeredOrgs.length === 1 ? administeredOrgs[0]! : null;
  return {
    ok: true,
    token,
    claims: {
      userId: p.user_id,
      org,
      staff: p.administrator === true,
      siteAdmin: roles.includes('site_admin') || administeredOrgs.length > 0,
      administeredOrgs,
      exp: p.exp,
      ...(typeof p.iat === 'number' ? { iat: p.iat } : {}),
      ...(typeof p.iss === 'string' ? { issuer: p.iss } : {}),
    },
  };
}

/**
 * Whether a fragment carries a token (`#token=...`, an old sign-in link): the console never signs
 * in from one (docs/console.md), it only takes it out of the address bar.
 */
export const carriesToken = (hash: string) => /(?:^#|[#&?])token=/.test(hash);

/**
 * How long after receiving a token from the LMS's sign-in the console goes back through it for
 * a new one: its lifetime (`exp - iat`, both the LMS's clock) less a fifth of it, at most 5
 * minutes. Counted from receipt on the browser's clock, so a browser clock that is off never
 * makes the renewal come early (a loop) or late.
 */
export function renewalDelaySeconds(claims: Claims, receivedAtSeconds: number): number {
  const lifetime = claims.iat !== undefined ? claims.exp - claims.iat : claims.exp - receivedAtSeconds;
  return Math.max(lifetime - Math.min(300, lifetime / 5), 0);
}

export function roleLabel(claims: Claims): string {
  if (claims.staff) return 'platform staff';
  if (claims.siteAdmin) return 'site administrator';
  return 'no administrator role';
}

export const isExpired = (claims: Claims, nowSeconds: number) => claims.exp <= nowSeconds;

/** "in 59 min", "in 2 h 5 min", "3 min ago": how far `exp` is from now. */
export function relativeExpiry(exp: number, nowSeconds: number): string {
  const delta = Math.round((exp - nowSeconds) / 60);
  const span = (minutes: number) => {
    const h = Math.floor(minutes / 60);
    const m = minutes % 60;
    if (h === 0) return `${m} min`;
    if (h >= 48) return `${Math.round(h / 24)} days`;
    return m === 0 ? `${h} h` : `${h} h ${m} min`;
  };
  if (exp <= nowSeconds) return delta === 0 ? 'just now' : `${span(-delta)} ago`;
  return delta === 0 ? 'in less than a minute' : `in ${span(delta)}`;
}
