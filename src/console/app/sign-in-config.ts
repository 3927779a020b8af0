/**
 * Whether the service offers the sign-in through the LMS (its `config.json`, no token needed):
 * the route that starts it and the LMS's logout that ends the LMS session too.
 */
export interface LmsSignIn {
  login: string;
  logout: string;
}

let loaded: Promise<LmsSignIn | null> | null = null;

export function lmsSignIn(): Promise<LmsSignIn | null> {
  loaded ??= (async () => {
    try {
      const res = await fetch('config.json', { credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' });
      if (!res.ok) return null;
      const body = (await res.json()) as { lmsSignIn?: LmsSignIn | null };
      const offer = body.lmsSignIn;
      return offer && typeof offer.login === 'string' && typeof offer.logout === 'string' ? offer : null;
    } catch {
      return null; // the paste form still works
    }
  })();
  return loaded;
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
