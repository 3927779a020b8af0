import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { Principal, TokenVerifier } from '../../http/auth';
import { unauthorized } from '../../http/error-responses';
import { ADMIN_ROLE_PREFIX } from '../../http/lms-tokens';
import type { LmsOauthSettings } from '../../lms-oauth-settings';
import { CONSOLE_PREFIX } from '../route';
import { derivedKey } from './state-cookie';

/**
 * The console's own token (docs/console.md, "Signing in through the LMS"): what the browser gets
 * after the sign-in through the LMS, instead of the LMS's platform-wide JWT, which never leaves
 * the service. Issued and accepted by this service only (`iss` and `aud` are the console's URL),
 * HS256 under a key derived from the client secret (every replica has it; nothing else does),
 * and short-lived: it ends when the LMS's token would, at most CONSOLE_TOKEN_MAX_SECONDS after it
 * was issued. Its claims are the ones the console and the API read: `user_id`, `administrator`
 * and the `course_access_groups_admin:<org>` roles.
 */
export const CONSOLE_TOKEN_MAX_SECONDS = 3600;

export const consoleIssuer = (settings: LmsOauthSettings) => `${settings.publicUrl}${CONSOLE_PREFIX}`;

export function consoleTokenSigner(settings: LmsOauthSettings) {
  const key = derivedKey(settings.clientSecret, 'console token');
  const issuer = consoleIssuer(settings);
  return (principal: Principal, lmsExp: number): Promise<string> => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      user_id: principal.userId,
      administrator: principal.isStaff,
      roles: principal.administeredOrgs.map((org) => `${ADMIN_ROLE_PREFIX}${org}`),
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(issuer)
      .setAudience(issuer)
      .setIssuedAt(now)
      .setExpirationTime(Math.min(lmsExp, now + CONSOLE_TOKEN_MAX_SECONDS))
      .sign(key);
  };
}

/** The API's trust path for the console's tokens (createTokenVerifier routes them here by `iss`). */
export function consoleTokenVerifier(settings: LmsOauthSettings): TokenVerifier {
  const key = derivedKey(settings.clientSecret, 'console token');
  const issuer = consoleIssuer(settings);
  return async (token) => {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, key, { algorithms: ['HS256'], issuer, audience: issuer, requiredClaims: ['exp', 'iat'] }));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw unauthorized('Token has expired.');
      if (err instanceof joseErrors.JOSEError) throw unauthorized('Invalid token.');
      throw err;
    }
    const { user_id: userId, administrator, roles } = payload;
    if (typeof userId !== 'number' || !Number.isSafeInteger(userId)) throw unauthorized('Token has no valid user_id claim.');
    const administeredOrgs = Array.isArray(roles)
      ? roles.filter((r): r is string => typeof r === 'string' && r.startsWith(ADMIN_ROLE_PREFIX)).map((r) => r.slice(ADMIN_ROLE_PREFIX.length))
      : [];
    return {
      userId,
      org: administeredOrgs.length === 1 ? administeredOrgs[0]! : null,
      isStaff: administrator === true,
      roles: [],
      administeredOrgs,
    };
  };
}
