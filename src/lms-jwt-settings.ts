import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';

/** One entry of the LMS's `JWT_ISSUERS` (edx-drf-extensions' shape), as the operator copies it. */
export interface LmsIssuer {
  readonly ISSUER: string;
  readonly AUDIENCE: string;
}

/** The LMS's public signing keys, imported once at start-up. */
export interface LmsKeySet {
  readonly keys: readonly KeyObject[];
}

/** config.ts turns it into its ConfigError (importing that class here would be a cycle). */
export class LmsSettingError extends Error {}

const bad = (name: string, why: string) => new LmsSettingError(`Invalid configuration: ${name}: ${why}`);

function parseJson(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw bad(name, 'not JSON');
  }
}

/**
 * `LMS_JWT_ISSUERS`: a non-empty JSON list of `{"ISSUER", "AUDIENCE"}`. A `SECRET_KEY` (the LMS's
 * list has one) is refused rather than ignored: the service never takes the LMS's HS256 tokens, so
 * the secret has no business in its environment.
 */
export function parseLmsIssuers(text: string): readonly LmsIssuer[] {
  const name = 'LMS_JWT_ISSUERS';
  const value = parseJson(name, text);
  if (!Array.isArray(value) || value.length === 0) throw bad(name, 'must be a non-empty JSON list of {"ISSUER": ..., "AUDIENCE": ...}');
  return Object.freeze(
    value.map((entry, i) => {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw bad(name, `entry ${i} is not an object`);
      const { ISSUER, AUDIENCE, ...rest } = entry as Record<string, unknown>;
      if (typeof ISSUER !== 'string' || ISSUER === '') throw bad(name, `entry ${i} has no ISSUER string`);
      if (typeof AUDIENCE !== 'string' || AUDIENCE === '') throw bad(name, `entry ${i} has no AUDIENCE string`);
      if ('SECRET_KEY' in rest) throw bad(name, `entry ${i} has a SECRET_KEY: remove it (the LMS's HS256 tokens are never accepted)`);
      const unknown = Object.keys(rest);
      if (unknown.length > 0) throw bad(name, `entry ${i} has unknown keys: ${unknown.join(', ')}`);
      return Object.freeze({ ISSUER, AUDIENCE });
    }),
  );
}

/**
 * `LMS_JWT_PUBLIC_SIGNING_JWK_SET`: the LMS's JWK set string, `{"keys": [...]}`, RSA public keys
 * only (the LMS signs with RS256 or RS512; edx-drf-extensions verifies RSA keys only with those).
 * A private key is refused: the setting is copied from the LMS, whose private JWK sits beside it.
 */
export function parseLmsKeySet(text: string): LmsKeySet {
  const name = 'LMS_JWT_PUBLIC_SIGNING_JWK_SET';
  const value = parseJson(name, text) as { keys?: unknown };
  if (value === null || typeof value !== 'object' || !Array.isArray(value.keys) || value.keys.length === 0) {
    throw bad(name, 'must be a JWK set, {"keys": [...]} with at least one key');
  }
  const keys = value.keys.map((jwk: unknown, i: number) => {
    if (jwk === null || typeof jwk !== 'object') throw bad(name, `key ${i} is not an object`);
    const k = jwk as JsonWebKey;
    if (k.kty !== 'RSA') throw bad(name, `key ${i} is not an RSA key (kty ${JSON.stringify(k.kty)})`);
    if (k.d !== undefined) throw bad(name, `key ${i} is a private key: give the public set (JWT_PUBLIC_SIGNING_JWK_SET), never the private JWK`);
    let key: KeyObject;
    try {
      key = createPublicKey({ key: k, format: 'jwk' });
    } catch (err) {
      throw bad(name, `key ${i} is not a valid RSA public key (${(err as Error).message})`);
    }
    // Node imports a modulus of any size, even empty; Tutor and the LMS's key generator make 2048 bits.
    if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw bad(name, `key ${i} is not a valid RSA public key of at least 2048 bits`);
    return key;
  });
  return Object.freeze({ keys: Object.freeze(keys) });
}
