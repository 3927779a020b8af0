import { createPublicKey, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, type JWTVerifyGetKey, errors as joseErrors, jwtVerify } from 'jose';
import type { Middleware } from 'koa';
import { type Config, jwtAlgorithm } from '../config';
import { forbidden, serviceUnavailable, unauthorized } from './error-responses';

/** Who is calling, from the token's claims (docs/api.md, tokens and roles). */
export interface Principal {
  userId: number;
  org: string | null;
  /** Platform staff: the Open edX `administrator` claim. */
  isStaff: boolean;
  roles: readonly string[];
}

export const isService = (p: Principal) => p.roles.includes('service');
export const isSiteAdminOf = (p: Principal, org: string) => p.roles.includes('site_admin') && p.org === org;

export type TokenVerifier = (token: string) => Promise<Principal>;

/**
 * Builds the verifier for the one key and the one algorithm the configuration names
 * (docs/api.md): `exp` is required, `iss`/`aud` are checked when configured, and `alg: none` or any
 * other algorithm is refused (jose never accepts `none`; `algorithms` pins the rest).
 */
export function createTokenVerifier(config: Config): TokenVerifier {
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
    };
  };
}

/** Requires `Authorization: Bearer <JWT>` and puts the caller in `ctx.state.principal`. */
export function authenticate(verify: TokenVerifier): Middleware {
  return async function requireBearerToken(ctx, next) {
    const header = ctx.get('Authorization');
    if (!header) throw unauthorized();
    const match = /^Bearer\s+([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)\s*$/i.exec(header);
    if (!match) throw unauthorized('Invalid Authorization header; expected "Bearer <token>".');
    ctx.state.principal = await verify(match[1]!);
    // Only platform staff may speak for another organization, on any endpoint.
    if (ctx.query.organization_uuid !== undefined && !ctx.state.principal.isStaff) {
      throw forbidden('Only platform staff may use organization_uuid.');
    }
    await next();
  };
}
