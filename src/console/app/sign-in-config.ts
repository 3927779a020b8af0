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

/** The sign-in through the LMS, coming back to `route` (`#/groups/3`). */
export const loginUrl = (offer: LmsSignIn, route: string) => `${offer.login}?return=${encodeURIComponent(route || '#/overview')}`;
