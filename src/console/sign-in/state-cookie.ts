import { hkdfSync, timingSafeEqual } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';

/**
 * What the login route must hand to the callback across the LMS round trip, kept in the browser
 * rather than in a session store so that any replica can finish the flow: a short-lived cookie,
 * encrypted and authenticated (JWE, dir + A256GCM) with a key derived from the client secret,
 * so it can be neither read (the PKCE verifier stays secret) nor forged.
 */
export interface SignInState {
  /** The OAuth2 `state` sent to the LMS and expected back. */
  state: string;
  /** The PKCE `code_verifier` whose S256 challenge went to the LMS. */
  verifier: string;
  /** The console route (`#/groups/3`) to return to. */
  route: string;
}

export const STATE_LIFETIME_SECONDS = 600;
/** One cookie per flow, named after its state, so two tabs (or a renewal beside a sign-in) never overwrite each other's. */
export const cookieName = (state: string) => `cag_console_signin_${state.slice(0, 12)}`;

export function stateKey(clientSecret: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', clientSecret, 'course-access-groups', 'console sign-in state cookie', 32));
}

export async function sealState(key: Uint8Array, state: SignInState): Promise<string> {
  return new EncryptJWT({ s: state.state, v: state.verifier, r: state.route })
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
    .setIssuedAt()
    .setExpirationTime(`${STATE_LIFETIME_SECONDS}s`)
    .encrypt(key);
}

/** The state the cookie holds if it is ours, unexpired and for `expectedState`; else null. */
export async function openState(key: Uint8Array, sealed: string, expectedState: string): Promise<SignInState | null> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtDecrypt(sealed, key, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] }));
  } catch {
    return null;
  }
  const { s, v, r } = payload;
  if (typeof s !== 'string' || typeof v !== 'string' || typeof r !== 'string') return null;
  const a = Buffer.from(s);
  const b = Buffer.from(expectedState);
  if (a.length !== b.length || !timingSafeEqual(a, b)) return null;
  return { state: s, verifier: v, route: r };
}
