import type { LmsOauthSettings } from '../../lms-oauth-settings';

/** Why the LMS gave no token for a code: it could not be reached, or it answered with an error. */
export class ExchangeFailed extends Error {
  constructor(
    message: string,
    /** The LMS's OAuth2 error code (`invalid_grant`), when it gave one. */
    readonly lmsError?: string,
  ) {
    super(message);
  }
}

const EXCHANGE_TIMEOUT_MS = 10_000;

/**
 * The code exchange, server to server (so the LMS needs no CORS for the console): DOT's token
 * endpoint with the client's id and secret in the body (client_secret_post, what the LMS's
 * `AccessTokenView` reads the client id from), the PKCE verifier, and `token_type=jwt` with
 * `asymmetric_jwt` so the LMS answers with a JWT signed by its private key (without it the JWT
 * would be HS256 with the LMS's secret, which the service never accepts).
 */
export async function exchangeCode(settings: LmsOauthSettings, code: string, verifier: string, redirectUri: string): Promise<string> {
  const body = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    client_id: settings.clientId,
    client_secret: settings.clientSecret,
    code_verifier: verifier,
    token_type: 'jwt',
    asymmetric_jwt: 'true',
  });
  let res: Response;
  try {
    res = await fetch(`${settings.internalUrl}/oauth2/access_token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(EXCHANGE_TIMEOUT_MS),
    });
  } catch (err) {
    const why = (err as Error).name === 'TimeoutError' ? `no answer in ${EXCHANGE_TIMEOUT_MS / 1000} s` : 'it cannot be reached';
    throw new ExchangeFailed(`The LMS’s token endpoint did not answer (${why}).`);
  }
  let answer: Record<string, unknown> = {};
  try {
    const parsed: unknown = await res.json();
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) answer = parsed as Record<string, unknown>;
  } catch {
    // not JSON: said below
  }
  if (!res.ok) {
    const error = typeof answer.error === 'string' ? answer.error.slice(0, 100) : undefined;
    throw new ExchangeFailed(`The LMS refused to exchange the code (HTTP ${res.status}${error ? `, ${error}` : ''}).`, error);
  }
  if (typeof answer.access_token !== 'string' || answer.token_type !== 'JWT') {
    throw new ExchangeFailed('The LMS’s answer holds no JWT (is token_type=jwt supported by this LMS?).');
  }
  return answer.access_token;
}
