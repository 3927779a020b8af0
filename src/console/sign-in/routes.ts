import Router from '@koa/router';
import type { Context } from 'koa';
import type { TokenVerifier } from '../../http/auth';
import { HttpError } from '../../http/error-responses';
import type { LmsOauthSettings } from '../../lms-oauth-settings';
import { CONSOLE_HEADERS, CONSOLE_PREFIX } from '../route';
import { ExchangeFailed, exchangeCode } from './lms-token-exchange';
import { codeChallenge, randomToken } from './pkce';
import { refusalPage } from './refusal-page';
import { cookieName, openState, STATE_LIFETIME_SECONDS, sealState, stateKey } from './state-cookie';
import { whyNotConsoleUser } from './who-may-sign-in';

export const LOGIN_PATH = `${CONSOLE_PREFIX}/oauth/login`;
export const CALLBACK_PATH = `${CONSOLE_PREFIX}/oauth/callback`;
/** The scopes asked for: `user_id` (the token's user) and `profile` (`administrator`, platform staff). */
export const SCOPES = 'user_id profile';
/** A console route to come back to (`#/groups/3`); anything else means the overview. */
const CONSOLE_ROUTE = /^#\/[A-Za-z0-9/_-]{0,200}$/;

/** What the console's page needs to offer the sign-in through the LMS; null when it is off. */
export interface ConsoleSignInConfig {
  lmsSignIn: { login: string; logout: string } | null;
}

/**
 * The console's sign-in through the LMS (docs/console.md): `oauth/login` sends the browser to the
 * LMS's `/oauth2/authorize` (authorization code, PKCE S256, a random state), `oauth/callback` checks
 * the state, exchanges the code, verifies the JWT with the LMS's trust path and hands it to the
 * console in the URL fragment, or answers with a page that says why not. `config.json` tells the
 * page whether to offer it. `verifyLmsToken` is the LMS's trust path alone: a token of the
 * service's own keys cannot come in this way.
 */
export function consoleSignInRoutes(settings: LmsOauthSettings | null, verifyLmsToken: TokenVerifier | null): Router {
  const router = new Router({ prefix: CONSOLE_PREFIX });
  const config: ConsoleSignInConfig = {
    lmsSignIn:
      settings && verifyLmsToken
        ? { login: LOGIN_PATH, logout: `${settings.browserUrl}/logout?redirect_url=${encodeURIComponent(`${settings.publicUrl}${CONSOLE_PREFIX}/`)}` }
        : null,
  };
  router.get('/config.json', (ctx) => {
    ctx.set(CONSOLE_HEADERS);
    ctx.body = config;
  });
  if (!settings || !verifyLmsToken) return router;

  const key = stateKey(settings.clientSecret);
  const redirectUri = `${settings.publicUrl}${CALLBACK_PATH}`;
  const secure = settings.publicUrl.startsWith('https:');
  const cookiePath = `${CONSOLE_PREFIX}/oauth/`;
  // Set by hand: Koa refuses a Secure cookie when it cannot see TLS itself (a proxy in front without TRUST_PROXY).
  const setCookie = (ctx: Context, name: string, value: string, maxAge: number) =>
    ctx.append('Set-Cookie', `${name}=${value}; Path=${cookiePath}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`);

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
    const state = randomToken();
    const verifier = randomToken();
    setCookie(ctx, cookieName(state), await sealState(key, { state, verifier, route }), STATE_LIFETIME_SECONDS);
    const authorize = new URL(`${settings.browserUrl}/oauth2/authorize`);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: settings.clientId,
      redirect_uri: redirectUri,
      scope: SCOPES,
      state,
      code_challenge: codeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    ctx.redirect(authorize.toString());
  });

  router.get('/oauth/callback', async (ctx) => {
    noStore(ctx);
    const param = (name: string) => (typeof ctx.query[name] === 'string' ? (ctx.query[name] as string) : '');
    const stateParam = param('state');
    // Whatever happens next, this flow's cookie has served.
    const sealed = stateParam ? ctx.cookies.get(cookieName(stateParam)) : undefined;
    if (sealed) setCookie(ctx, cookieName(stateParam), '', 0);

    const lmsError = param('error');
    if (lmsError) {
      if (lmsError === 'access_denied') {
        return refuse(ctx, 403, 'consent denied', {
          title: 'Sign-in cancelled',
          why: 'The LMS did not let the console use your account: access was denied on the LMS’s authorization page.',
          retry: true,
        });
      }
      const description = param('error_description').slice(0, 200);
      return refuse(ctx, 400, `lms error ${lmsError.slice(0, 50)}`, {
        title: 'The LMS refused the sign-in',
        why: `The LMS answered with the error “${lmsError.slice(0, 50)}”${description ? `: ${description}` : ''}. An administrator of the LMS may need to check the console’s OAuth2 application (its redirect URI and scopes).`,
        retry: true,
      });
    }
    const state = sealed && stateParam ? await openState(key, sealed, stateParam) : null;
    if (!state) {
      return refuse(ctx, 400, 'bad state', {
        title: 'This sign-in cannot be checked',
        why: 'The sign-in’s state is missing, expired, or does not match the one this browser started with (a sign-in must finish within 10 minutes, in the browser that started it). Nothing was signed in.',
        retry: true,
      });
    }
    const code = param('code');
    if (!code) {
      return refuse(ctx, 400, 'no code', { title: 'The LMS sent no code', why: 'The LMS came back without an authorization code.', retry: true });
    }

    let token: string;
    try {
      token = await exchangeCode(settings, code, state.verifier, redirectUri);
    } catch (err) {
      if (!(err instanceof ExchangeFailed)) throw err;
      return refuse(ctx, 502, `exchange failed${err.lmsError ? ` ${err.lmsError}` : ''}`, {
        title: 'The sign-in could not be finished',
        why: `${err.message} Try again; if it keeps failing, the service’s LMS_OAUTH_* settings or the LMS’s application may be wrong.`,
        retry: true,
      });
    }

    let why: string | null;
    let userId: number | undefined;
    try {
      const principal = await verifyLmsToken(token);
      userId = principal.userId;
      why = whyNotConsoleUser(principal);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      const detail = typeof err.body.detail === 'string' ? err.body.detail : 'refused';
      return refuse(ctx, 403, `token refused: ${detail}`, {
        title: 'The LMS’s token was refused',
        why: `The service does not trust the token the LMS gave: ${detail} The service’s LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET must be the LMS’s own.`,
        retry: false,
      });
    }
    if (why) {
      return refuse(ctx, 403, 'not a console user', { title: 'Your account cannot use the console', why, retry: false });
    }
    ctx.state.log.info({ user_id: userId }, 'console sign-in through the LMS');
    // The fragment never reaches a server; the console takes the token out of the address bar at once.
    const fragment = new URLSearchParams({ token, route: state.route, via: 'lms' });
    ctx.redirect(`${CONSOLE_PREFIX}/#${fragment.toString()}`);
  });

  return router;
}
