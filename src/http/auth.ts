import { createPublicKey, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Middleware } from 'koa';
import type { Config } from '../config';
import { forbidden, unauthorized } from './errors';

/** Who is calling, from the token's claims (SPEC section 2). */
export interface Principal {
  userId: number;
  org: string | null;
  /** Platform staff: the Open edX `administrator` claim. */
  isStaff: boolean;
  roles: readonly string[];
}

export const isService = (p: Principal) => p.roles.includes('service');
export const isSiteAdminOf = (p: Principal, org: string) => p.roles.includes('site_admin') && p.org === org;

export interface TokenVerifier {
  (token: string): Promise<Principal>;
}

/** Builds the verifier for the one key the configuration names; other algorithms are refused. */
export function createTokenVerifier(config: Config): TokenVerifier {
  let key: Uint8Array | KeyObject | JWTVerifyGetKey;
  let algorithms: string[];
  if (config.JWT_SECRET) {
    key = new TextEncoder().encode(config.JWT_SECRET);
    algorithms = ['HS256'];
  } else if (config.JWT_PUBLIC_KEY) {
    const publicKey = createPublicKey(config.JWT_PUBLIC_KEY);
    key = publicKey;
    algorithms = publicKey.asymmetricKeyType === 'ec' ? ['ES256'] : ['RS256'];
  } else {
    key = createRemoteJWKSet(new URL(config.JWT_JWKS_URL!));
    algorithms = ['RS256', 'ES256'];
  }
  const options = {
    algorithms,
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
