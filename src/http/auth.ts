import { createPublicKey, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, decodeJwt, type JWTVerifyGetKey, errors as joseErrors, jwtVerify } from 'jose';
import type { Middleware } from 'koa';
import { type Config, jwtAlgorithm } from '../config';
import { consoleIssuer, consoleTokenVerifier } from '../console/sign-in/console-token';
import { forbidden, serviceUnavailable, unauthorized } from './error-responses';
import { createLmsTokenVerifier } from './lms-tokens';

/** Who is calling, from the token's claims (docs/api.md, tokens and roles). */
export interface Principal {
  userId: number;
  org: string | null;
  /** Platform staff: the Open edX `administrator` claim. */
  isStaff: boolean;
  roles: readonly string[];
  /**
   * The organizations an LMS token makes the caller administer (its `course_access_groups_admin:<org>`
   * roles), any of which a request may name with organization_uuid. Empty for the service's tokens.
   */
  administeredOrgs: readonly string[];
}

export const isService = (p: Principal) => p.roles.includes('service');
export const isSiteAdminOf = (p: Principal, org: string) => (p.roles.includes('site_admin') && p.org === org) || p.administeredOrgs.includes(org);

export type TokenVerifier = (token: string) => Promise<Principal>;

/**
 * One verifier per trust path (docs/api.md): the service's own keys, the LMS's, and the console's
 * own tokens (with LMS_OAUTH_CLIENT_ID). A token goes to the LMS's when its (not yet verified)
 * `iss` is one of LMS_JWT_ISSUERS, to the console's when it is the console's, else to the
 * service's; each path then verifies it on its own terms, so an HS256 token is never taken as the LMS's.
 */
export function createTokenVerifier(config: Config): TokenVerifier {
  const hasServiceKey = config.JWT_SECRET !== undefined || config.JWT_PUBLIC_KEY !== undefined || config.JWT_JWKS_URL !== undefined;
  const service = hasServiceKey ? createServiceTokenVerifier(config) : null;
  const lmsIssuers = new Set((config.LMS_JWT_ISSUERS ?? []).map((i) => i.ISSUER));
  const lms =
    config.LMS_JWT_ISSUERS && config.LMS_JWT_PUBLIC_SIGNING_JWK_SET
      ? createLmsTokenVerifier(config.LMS_JWT_ISSUERS, config.LMS_JWT_PUBLIC_SIGNING_JWK_SET)
      : null;
  const consolePath = config.LMS_OAUTH ? { issuer: consoleIssuer(config.LMS_OAUTH), verify: consoleTokenVerifier(config.LMS_OAUTH) } : null;
  return async (token) => {
    let issuer: unknown;
    try {
      issuer = decodeJwt(token).iss;
    } catch {
      throw unauthorized('Invalid token.');
    }
    if (lms && typeof issuer === 'string' && lmsIssuers.has(issuer)) return lms(token);
    if (consolePath && issuer === consolePath.issuer) return consolePath.verify(token);
    if (service) return service(token);
    throw unauthorized('Invalid token.');
  };
}

/**
 * Builds the verifier for the one key and the one algorithm the configuration names
 * (docs/api.md): `exp` is required, `iss`/`aud` are checked when configured, and `alg: none` or any
 * other algorithm is refused (jose never accepts `none`; `algorithms` pins the rest).
 */
function createServiceTokenVerifier(config: Config): TokenVerifier {
  const algorithm = jwtAlgorithm(config);
  let key: Uint8Array | KeyObject | JWTVerifyGetKey;
  if (config.JWT_SECRET) key = new TextEncoder().encode(config.JWT_SECRET);
  else if (config.JWT_PUBLIC_KEY) key = createPublicKey(config.JWT_PUBLIC_KEY);
  else key = createRemoteJWKSet(new URL(config.JWT_JWKS_URL!));
  const options = {
    algorithms: [algorithm],
    requiredClaims: ['exp'],
    ...(config.JWT_ISSUER ? { issuer: config.JWT_ISSUER } : {}),
    ...(config.JWT_AUDIENCE ? { audience: config.JWT_AUDIENCE } : {}),
  };
  return async (token) => {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, key as Uint8Array, options));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw unauthorized('Token has expired.');
      const keysUnreachable = err instanceof joseErrors.JWKSTimeout || (config.JWT_JWKS_URL && !(err instanceof joseErrors.JOSEError));
      // The key set could not be fetched: not the caller's fault, and not a reason to call the token bad.
      if (keysUnreachable) throw serviceUnavailable('The signing keys cannot be fetched; try again shortly.');
      if (err instanceof joseErrors.JOSEError) throw unauthorized('Invalid token.');
      throw err;
    }
    const { user_id: userId, org, administrator, roles } = payload;
    if (typeof userId !== 'number' || !Number.isSafeInteger(userId)) throw unauthorized('Token has no valid user_id claim.');
    return {
      userId,
      org: typeof org === 'string' && org !== '' ? org : null,
      isStaff: administrator === true,
      roles: Array.isArray(roles) ? roles.filter((r): r is string => typeof r === 'string') : [],
      administeredOrgs: [],
    };
  };
}

/**
 * Requires `Authorization: Bearer <JWT>` or `Authorization: JWT <JWT>` (what Open edX clients
 * send) and puts the caller in `ctx.state.principal`.
 */
export function authenticate(verify: TokenVerifier): Middleware {
  return async function requireToken(ctx, next) {
    const header = ctx.get('Authorization');
    if (!header) throw unauthorized();
    const match = /^(?:Bearer|JWT)\s+([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)\s*$/i.exec(header);
    if (!match) throw unauthorized('Invalid Authorization header; expected "Bearer <token>" or "JWT <token>".');
    const principal: Principal = await verify(match[1]!);
    ctx.state.principal = principal;
    // Only platform staff may speak for another organization, on any endpoint; an LMS administrator
    // of several names one of their own.
    const named = ctx.query.organization_uuid;
    if (named !== undefined && !principal.isStaff && !(typeof named === 'string' && principal.administeredOrgs.includes(named))) {
      throw forbidden('Only platform staff may use organization_uuid, or an administrator for one of their own organizations.');
    }
    await next();
  };
}
