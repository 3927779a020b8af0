import { type JWTPayload, type JWTVerifyOptions, errors as joseErrors, jwtVerify } from 'jose';
import type { LmsIssuer, LmsKeySet } from '../lms-jwt-settings';
import type { Principal, TokenVerifier } from './auth';
import { forbidden, unauthorized } from './error-responses';

/**
 * The LMS's own JWTs (docs/api.md, "the LMS's tokens"), checked as edx-drf-extensions'
 * `auth/jwt/decoder.py` `jwt_decode_handler` checks them in the LMS and every Open edX service,
 * but for its HS256 pass: the service holds no LMS secret.
 * - `verify_jwk_signature_using_keyset`: every key of the set is tried, in order, `kid` or not
 *   (the decoder never reads `kid`); RS256 or RS512 for an RSA key; the audience is the first
 *   issuer's `AUDIENCE`; no leeway on `exp` in that pass (so none here either).
 * - `_decode_and_verify_token`: `exp` and `iat` required; `iss` one of the list's `ISSUER`s.
 * - `_set_token_defaults`: a `version` whose major part is above 1 (`JWT_SUPPORTED_VERSION`
 *   1.2.0) is refused; no `version` counts as 1.0.0, but a `version` of null is refused
 *   (`_get_and_set_version` defaults only an absent claim; `Version(None)` then raises).
 * - `NotJwtRestrictedApplication`: a restricted application's token is refused (403, as DRF);
 *   `JwtRestrictedApplication` tests the claim as a Python condition, so any truthy value restricts.
 */
const SUPPORTED_MAJOR_VERSION = 1;
/**
 * How far ahead of this service's clock a token's `iat` may be: the LMS's `JWT_AUTH['JWT_LEEWAY']`
 * (1 s in lms/envs/common.py and every Open edX service's settings), the leeway edx-drf-extensions'
 * `_decode_and_verify_token` passes to PyJWT (decoder.py, `leeway=api_settings.JWT_LEEWAY`).
 * Upstream's signature pass passes none, so PyJWT refuses an `iat` even a fraction of a second
 * ahead there; the service allows the configured leeway, so that a token the LMS plugin signs
 * and sends at once is not refused when this clock is a little behind the LMS's (docs/api.md).
 * `exp` keeps the signature pass's rule: no leeway.
 */
export const IAT_LEEWAY_SECONDS = 1;
const EXP_LEEWAY_SECONDS = 0;
/**
 * The role of the LMS plugin's own tokens (integrations/openedx, service_token.py): the service's
 * `service` role (access decisions only), taken only on a client-credentials token.
 */
export const SERVICE_ROLE = 'course_access_groups_service';
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
/** The role the LMS plugin emits through SYSTEM_WIDE_ROLE_CLASSES: `course_access_groups_admin:<org>`. */
export const ADMIN_ROLE_PREFIX = 'course_access_groups_admin:';

export function createLmsTokenVerifier(issuers: readonly LmsIssuer[], keySet: LmsKeySet): TokenVerifier {
  const options: JWTVerifyOptions = {
    algorithms: ['RS256', 'RS512'],
    issuer: issuers.map((i) => i.ISSUER),
    audience: issuers[0]!.AUDIENCE,
    requiredClaims: ['exp', 'iat'],
    clockTolerance: EXP_LEEWAY_SECONDS,
  };
  return async (token) => principalOf(await verified(token, keySet, options));
}

async function verified(token: string, keySet: LmsKeySet, options: JWTVerifyOptions): Promise<JWTPayload> {
  let payload: JWTPayload | undefined;
  for (const key of keySet.keys) {
    try {
      ({ payload } = await jwtVerify(token, key, options));
      break;
    } catch (err) {
      if (!(err instanceof joseErrors.JOSEError)) throw err;
      // Only the signature depends on the key; any other failure is the token's, whichever key.
      if (err instanceof joseErrors.JWSSignatureVerificationFailed) continue;
      if (err instanceof joseErrors.JWTExpired) throw unauthorized('Token has expired.');
      throw unauthorized('Invalid token.');
    }
  }
  if (!payload) throw unauthorized('Invalid token.');
  // jose checks a future `iat` only with maxTokenAge; PyJWT refuses one (ImmatureSignatureError).
  if (typeof payload.iat !== 'number' || payload.iat > Date.now() / 1000 + IAT_LEEWAY_SECONDS) throw unauthorized('Invalid token.');
  const version = Object.hasOwn(payload, 'version') ? payload.version : '1.0.0';
  const parts = typeof version === 'string' ? SEMVER.exec(version) : null;
  if (!parts || Number(parts[1]) > SUPPORTED_MAJOR_VERSION) throw unauthorized('Unsupported token version.');
  if (pythonTruthy(payload.is_restricted)) throw forbidden("A restricted application's token cannot use this service.");
  return payload;
}

/** Whether Python takes a JSON value as true in a condition: not None, False, 0, "", [] nor {}. */
function pythonTruthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string' || Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

/**
 * `administrator: true` is platform staff; `course_access_groups_admin:<org>` makes the caller an
 * administrator of `<org>`; `course_access_groups_service` on a client-credentials token is the
 * service role (the LMS plugin: decisions, never the admin API); every other role is ignored. The LMS names no `org`: with one administered organization it is the
 * request's, with several the request names one (organization_uuid).
 */
function principalOf(payload: JWTPayload): Principal {
  const { user_id: userId, administrator, roles } = payload;
  if (typeof userId !== 'number' || !Number.isSafeInteger(userId)) throw unauthorized('Token has no valid user_id claim.');
  const administered = new Set<string>();
  if (Array.isArray(roles)) {
    for (const role of roles) {
      if (typeof role === 'string' && role.startsWith(ADMIN_ROLE_PREFIX) && role.length > ADMIN_ROLE_PREFIX.length) {
        administered.add(role.slice(ADMIN_ROLE_PREFIX.length));
      }
    }
  }
  const administeredOrgs = [...administered];
  const service = payload.grant_type === 'client-credentials' && Array.isArray(roles) && roles.includes(SERVICE_ROLE);
  return {
    userId,
    org: administeredOrgs.length === 1 ? administeredOrgs[0]! : null,
    isStaff: administrator === true,
    roles: service ? ['service'] : [],
    administeredOrgs,
  };
}
