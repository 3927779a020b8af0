/**
 * Whether the service offers the sign-in through the LMS (its `config.json`, no token needed):
 * the route that starts it and the LMS's logout that ends the LMS session too.
 */
export interface LmsSignIn {
  login: string;
  logout: string;
}

/** The service's `config.json`: what the console's sign-in may offer (no token needed to read it). */
export interface ConsoleConfig {
  lmsSignIn: LmsSignIn | null;
  /** The issuers of the LMS's tokens, which the page never keeps as they are. */
  lmsIssuers: string[];
  /** Where a pasted LMS token is traded for the console's own; null when the service cannot. */
  exchange: string | null;
}

let loaded: Promise<ConsoleConfig | null> | null = null;

/** The service's config.json, or null when it could not be read (asked again next time: a failure is never kept). */
export function consoleConfig(): Promise<ConsoleConfig | null> {
  loaded ??= (async () => {
    try {
      const res = await fetch('config.json', { credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' });
      if (!res.ok) return null;
      const body = (await res.json()) as Partial<ConsoleConfig>;
      const offer = body.lmsSignIn;
      return {
        lmsSignIn: offer && typeof offer.login === 'string' && typeof offer.logout === 'string' ? offer : null,
        lmsIssuers: Array.isArray(body.lmsIssuers) ? body.lmsIssuers.filter((i): i is string => typeof i === 'string') : [],
        exchange: typeof body.exchange === 'string' ? body.exchange : null,
      };
    } catch {
      return null;
    }
  })().then((config) => {
    if (config === null) loaded = null;
    return config;
  });
  return loaded;
}

export const lmsSignIn = (): Promise<LmsSignIn | null> => consoleConfig().then((c) => c?.lmsSignIn ?? null);

/**
 * The console's own token for an LMS JWT pasted by hand (the service checks it as the LMS's
 * sign-in does), or why there is none. The LMS's JWT opens every Open edX service, so the page
 * never keeps it (docs/console.md, "Pasted tokens").
 */
export async function exchangeLmsToken(exchange: string, lmsToken: string): Promise<{ token: string } | { error: string }> {
  try {
    const res = await fetch(exchange, {
      method: 'POST',
      headers: { Authorization: `JWT ${lmsToken}`, Accept: 'application/json' },
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
    const body = (await res.json()) as { token?: unknown; detail?: unknown };
    if (res.ok && typeof body.token === 'string') return { token: body.token };
    return { error: typeof body.detail === 'string' ? body.detail : 'The service refused this LMS token.' };
  } catch {
    return { error: 'The service cannot be reached. Check the connection and try again.' };
  }
}

/** The sign-in through the LMS, coming back to `route` (`#/groups/3`): a link, started from the console page. */
export const loginUrl = (offer: LmsSignIn, route: string) => `${offer.login}?return=${encodeURIComponent(route || '#/overview')}`;

/**
 * The secret of the sign-in this tab started, in this tab's sessionStorage only: the service
 * hands the sign-in's token to whoever shows it (oauth/finish), so another tab, or a link opened
 * in a fresh one, finishes nothing.
 */
const TAB_KEY = 'cag-console-signin-tab';
const FINISH = 'oauth/finish';

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/** Starts a sign-in through the LMS from this tab (the browser leaves the page). */
export function beginLmsSignIn(offer: LmsSignIn, route: string): void {
  const tab = randomSecret();
  sessionStorage.setItem(TAB_KEY, tab);
  location.assign(`${loginUrl(offer, route)}&tab=${tab}`);
}

/**
 * Collects the token of the sign-in this tab started, once: null when this tab started none,
 * else the token or why there is none.
 */
export async function finishLmsSignIn(): Promise<{ token: string } | { error: string } | null> {
  const tab = sessionStorage.getItem(TAB_KEY);
  if (!tab) return null;
  sessionStorage.removeItem(TAB_KEY);
  try {
    const res = await fetch(FINISH, {
      method: 'POST',
      headers: { 'X-Console-Sign-In': tab, Accept: 'application/json' },
      credentials: 'same-origin',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
    const body = (await res.json()) as { token?: unknown; detail?: unknown };
    if (res.ok && typeof body.token === 'string') return { token: body.token };
    return { error: typeof body.detail === 'string' ? body.detail : 'The sign-in through the LMS could not be finished.' };
  } catch {
    return { error: 'The service cannot be reached. Check the connection and try again.' };
  }
}
