import Router from '@koa/router';
import { decodeJwt } from 'jose';
import type { Context } from 'koa';
import type { TokenVerifier } from '../../http/auth';
import { HttpError } from '../../http/error-responses';
import type { LmsOauthSettings } from '../../lms-oauth-settings';
import { CONSOLE_HEADERS, CONSOLE_PREFIX } from '../route';
import { consoleTokenSigner } from './console-token';
import { ExchangeFailed, exchangeCode } from './lms-token-exchange';
import { codeChallenge, randomToken } from './pkce';
import { refusalPage } from './refusal-page';
import {
  ATTEMPTS_COOKIE,
  attemptOf,
  derivedKey,
  FINISH_COOKIE,
  FINISH_LIFETIME_SECONDS,
  newAttempt,
  openAttempts,
  openFinish,
  sealAttempts,
  sealFinish,
} from './state-cookie';
import { whyNotConsoleUser } from './who-may-sign-in';

export const LOGIN_PATH = `${CONSOLE_PREFIX}/oauth/login`;
export const CALLBACK_PATH = `${CONSOLE_PREFIX}/oauth/callback`;
export const FINISH_PATH = `${CONSOLE_PREFIX}/oauth/finish`;
/** Where the console trades an LMS JWT pasted by hand for its own token (relative to the console's page). */
export const EXCHANGE = 'oauth/exchange';
/** The header the console's tab sends its sign-in secret in (a custom header: no other origin can send it without a preflight the service never allows). */
export const TAB_HEADER = 'X-Console-Sign-In';
/** The query the console page starts a sign-in from its own tab on (a link to oauth/login, which has no tab of its own). */
export const START_QUERY = 'sign-in=lms';
const TAB_SECRET = /^[A-Za-z0-9_-]{43}$/;
/** RFC 6749's error codes: the only words of the LMS's error parameter a refusal page repeats. */
const OAUTH_ERRORS = new Set([
  'invalid_request',
  'unauthorized_client',
  'unsupported_response_type',
  'invalid_scope',
  'server_error',
  'temporarily_unavailable',
]);
/** The scopes asked for: `user_id` (the token's user) and `profile` (`administrator`, platform staff). */
export const SCOPES = 'user_id profile';
/** A console route to come back to (`#/groups/3`); anything else means the overview. */
const CONSOLE_ROUTE = /^#\/[A-Za-z0-9/_-]{0,200}$/;

/** What the console's page needs to offer the sign-in through the LMS; null when it is off. */
export interface ConsoleSignInConfig {
  lmsSignIn: { login: string; logout: string } | null;
  /** The LMS's issuers (public): a pasted token from one of them is never kept by the page as it is. */
  lmsIssuers: string[];
  /** Where a pasted LMS token is traded for the console's own (null: not offered, and the page refuses it). */
  exchange: string | null;
}

/**
 * The console's sign-in through the LMS (docs/console.md): `oauth/login` sends the browser to the
 * LMS's `/oauth2/authorize` (authorization code, PKCE S256, a random state), `oauth/callback` checks
 * the state, exchanges the code, verifies the JWT with the LMS's trust path and keeps the
 * console's own token for the tab that started it (`oauth/finish`), or answers with a page that
 * says why not; `oauth/exchange` trades an LMS JWT pasted by hand for the console's own token. `config.json` tells the
 * page whether to offer it. `verifyLmsToken` is the LMS's trust path alone: a token of the
 * service's own keys cannot come in this way.
 */
export function consoleSignInRoutes(settings: LmsOauthSettings | null, verifyLmsToken: TokenVerifier | null, lmsIssuers: readonly string[] = []): Router {
  const router = new Router({ prefix: CONSOLE_PREFIX });
  const offered = settings !== null && verifyLmsToken !== null;
  const config: ConsoleSignInConfig = {
    lmsSignIn: offered
      ? { login: LOGIN_PATH, logout: `${settings.browserUrl}/logout?redirect_url=${encodeURIComponent(`${settings.publicUrl}${CONSOLE_PREFIX}/`)}` }
      : null,
    lmsIssuers: verifyLmsToken ? [...lmsIssuers] : [],
    exchange: offered ? EXCHANGE : null,
  };
  router.get('/config.json', (ctx) => {
    ctx.set(CONSOLE_HEADERS);
    ctx.body = config;
  });
  if (!settings || !verifyLmsToken) return router;

  const attemptsKey = derivedKey(settings.clientSecret, 'state cookie');
  const finishKey = derivedKey(settings.clientSecret, 'finish cookie');
  const signConsoleToken = consoleTokenSigner(settings);
  const redirectUri = `${settings.publicUrl}${CALLBACK_PATH}`;
  const secure = settings.publicUrl.startsWith('https:');
  const cookiePath = `${CONSOLE_PREFIX}/oauth/`;
  // Set by hand: Koa refuses a Secure cookie when it cannot see TLS itself (a proxy in front without TRUST_PROXY).
  const setCookie = (ctx: Context, name: string, value: string, maxAge: number, sameSite: 'Lax' | 'Strict') =>
    ctx.append('Set-Cookie', `${name}=${value}; Path=${cookiePath}; Max-Age=${maxAge}; HttpOnly; SameSite=${sameSite}${secure ? '; Secure' : ''}`);

  const noStore = (ctx: Context) => {
    ctx.set(CONSOLE_HEADERS);
    ctx.set('Cache-Control', 'no-store');
  };

  const refuse = (ctx: Context, status: number, reason: string, page: Parameters<typeof refusalPage>[0]) => {
    ctx.state.log.info({ reason, status }, 'console sign-in through the LMS refused');
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = refusalPage(page);
  };

  router.get('/oauth/login', async (ctx) => {
    noStore(ctx);
    const requested = typeof ctx.query.return === 'string' ? ctx.query.return : '';
    const route = CONSOLE_ROUTE.test(requested) ? requested : '#/overview';
    const tab = typeof ctx.query.tab === 'string' ? ctx.query.tab : '';
    if (!TAB_SECRET.test(tab)) {
      // A link (the LMS's page, a bookmark): the console page starts the sign-in from its tab.
      ctx.redirect(`${CONSOLE_PREFIX}/?${START_QUERY}${route}`);
      return;
    }
    const attempt = newAttempt({ state: randomToken(), verifier: randomToken(), route, tab });
    const earlier = await openAttempts(attemptsKey, ctx.cookies.get(ATTEMPTS_COOKIE));
    const sealed = await sealAttempts(attemptsKey, [attempt, ...earlier]);
    // Lax: the cookie must come back on the LMS's top-level redirect to the callback.
    setCookie(ctx, ATTEMPTS_COOKIE, sealed, Math.max(attempt.exp - Math.floor(Date.now() / 1000), 1), 'Lax');
    const authorize = new URL(`${settings.browserUrl}/oauth2/authorize`);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: settings.clientId,
      redirect_uri: redirectUri,
      scope: SCOPES,
      state: attempt.state,
      code_challenge: codeChallenge(attempt.verifier),
      code_challenge_method: 'S256',
    }).toString();
    ctx.redirect(authorize.toString());
  });

  router.get('/oauth/callback', async (ctx) => {
    noStore(ctx);
    const param = (name: string) => (typeof ctx.query[name] === 'string' ? (ctx.query[name] as string) : '');
    // The state first: until it is this browser's, nothing of the query is believed or shown.
    const attempts = await openAttempts(attemptsKey, ctx.cookies.get(ATTEMPTS_COOKIE));
    const attempt = param('state') ? attemptOf(attempts, param('state')) : undefined;
    if (!attempt) {
      return refuse(ctx, 400, 'bad state', {
        title: 'This sign-in cannot be checked',
        why: 'The sign-in’s state is missing, expired, or does not match one this browser started (a sign-in must finish within 10 minutes, in the browser that started it). Nothing was signed in.',
        retry: true,
      });
    }
    // Whatever happens next, this attempt has served; the others stay.
    const others = attempts.filter((a) => a !== attempt);
    if (others.length > 0) {
      setCookie(ctx, ATTEMPTS_COOKIE, await sealAttempts(attemptsKey, others), Math.max(...others.map((a) => a.exp)) - Math.floor(Date.now() / 1000), 'Lax');
    } else {
      setCookie(ctx, ATTEMPTS_COOKIE, '', 0, 'Lax');
    }

    const lmsError = param('error');
    if (lmsError) {
      if (lmsError === 'access_denied') {
        return refuse(ctx, 403, 'consent denied', {
          title: 'Sign-in cancelled',
          why: 'The LMS did not let the console use your account: access was denied on the LMS’s authorization page.',
          retry: true,
        });
      }
      // Only a known OAuth2 code is repeated; the LMS's free text (error_description) never is.
      const known = OAUTH_ERRORS.has(lmsError) ? lmsError : null;
      return refuse(ctx, 400, `lms error ${known ?? 'unknown'}`, {
        title: 'The LMS refused the sign-in',
        why: `The LMS answered with ${known ? `the error “${known}”` : 'an error'}. An administrator of the LMS may need to check the console’s OAuth2 application (its redirect URI and scopes).`,
        retry: true,
      });
    }
    const code = param('code');
    if (!code) {
      return refuse(ctx, 400, 'no code', { title: 'The LMS sent no code', why: 'The LMS came back without an authorization code.', retry: true });
    }

    let lmsToken: string;
    try {
      lmsToken = await exchangeCode(settings, code, attempt.verifier, redirectUri);
    } catch (err) {
      if (!(err instanceof ExchangeFailed)) throw err;
      return refuse(ctx, 502, `exchange failed${err.lmsError ? ` ${err.lmsError}` : ''}`, {
        title: 'The sign-in could not be finished',
        why: `${err.message} Try again; if it keeps failing, the service’s LMS_OAUTH_* settings or the LMS’s application may be wrong.`,
        retry: true,
      });
    }

    let principal: Awaited<ReturnType<TokenVerifier>>;
    try {
      principal = await verifyLmsToken(lmsToken);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      const detail = typeof err.body.detail === 'string' ? err.body.detail : 'refused';
      return refuse(ctx, 403, `token refused: ${detail}`, {
        title: 'The LMS’s token was refused',
        why: `The service does not trust the token the LMS gave: ${detail} The service’s LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET must be the LMS’s own.`,
        retry: false,
      });
    }
    const why = whyNotConsoleUser(principal);
    if (why) {
      return refuse(ctx, 403, 'not a console user', { title: 'Your account cannot use the console', why, retry: false });
    }
    // The LMS's JWT stops here: the browser gets the console's own token, and only the tab that
    // started this attempt can collect it (oauth/finish, with the tab's secret).
    const token = await signConsoleToken(principal, decodeJwt(lmsToken).exp!);
    setCookie(ctx, FINISH_COOKIE, await sealFinish(finishKey, { token, tab: attempt.tab, route: attempt.route }), FINISH_LIFETIME_SECONDS, 'Strict');
    ctx.state.log.info({ user_id: principal.userId }, 'console sign-in through the LMS');
    ctx.redirect(`${CONSOLE_PREFIX}/${attempt.route}`);
  });

  // The tab collects its token: same origin only (the custom header), once (the cookie is dropped).
  router.post('/oauth/finish', async (ctx) => {
    noStore(ctx);
    const tab = ctx.get(TAB_HEADER);
    const fetchSite = ctx.get('Sec-Fetch-Site');
    const sealed = ctx.cookies.get(FINISH_COOKIE);
    if (sealed) setCookie(ctx, FINISH_COOKIE, '', 0, 'Strict');
    const done = TAB_SECRET.test(tab) && (fetchSite === '' || fetchSite === 'same-origin') ? await openFinish(finishKey, sealed, tab) : null;
    if (!done) {
      ctx.state.log.info({ reason: 'no sign-in for this tab' }, 'console sign-in through the LMS refused');
      ctx.status = 403;
      ctx.body = { detail: 'No sign-in waits for this tab: sign in again from here.' };
      return;
    }
    ctx.body = done;
  });

  // An LMS JWT pasted by hand (docs/console.md, "Pasted tokens"): checked as the callback checks
  // the one it gets, and traded for the console's own token, so the page never keeps the LMS's.
  // Sent in the Authorization header, as to the API: the answer is a token for the sender alone.
  router.post(`/${EXCHANGE}`, async (ctx) => {
    noStore(ctx);
    const lmsToken = ctx
      .get('Authorization')
      .replace(/^(?:Bearer|JWT)\s+/i, '')
      .trim();
    let principal: Awaited<ReturnType<TokenVerifier>>;
    try {
      principal = await verifyLmsToken(lmsToken);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      ctx.status = err.status;
      ctx.body = err.body;
      return;
    }
    const why = whyNotConsoleUser(principal);
    if (why) {
      ctx.status = 403;
      ctx.body = { detail: why };
      return;
    }
    ctx.state.log.info({ user_id: principal.userId }, 'console token given for a pasted LMS token');
    ctx.body = { token: await signConsoleToken(principal, decodeJwt(lmsToken).exp!) };
  });

  return router;
}
