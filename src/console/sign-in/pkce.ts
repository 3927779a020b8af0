import { createHash, randomBytes } from 'node:crypto';

/** 32 random bytes, base64url: an OAuth2 `state`, or a PKCE `code_verifier` (RFC 7636: 43 characters). */
export const randomToken = () => randomBytes(32).toString('base64url');

/** RFC 7636 S256: BASE64URL(SHA256(ASCII(code_verifier))). */
export const codeChallenge = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');
