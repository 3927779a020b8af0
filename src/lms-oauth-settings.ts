import { readFileSync } from 'node:fs';

/**
 * The console's sign-in through the LMS (docs/console.md, "Signing in through the LMS"): an
 * OAuth2 authorization-code flow with PKCE, the code exchanged by the service as a confidential
 * client. On only when `LMS_OAUTH_CLIENT_ID` is set.
 */
export interface LmsOauthSettings {
  /** The LMS's root as a browser reaches it: `/oauth2/authorize` and `/logout` live under it. */
  readonly browserUrl: string;
  /** The LMS's root the service posts the code exchange to (`LMS_OAUTH_INTERNAL_URL`, else browserUrl). */
  readonly internalUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The service's own root as browsers see it (`PUBLIC_URL`), without a trailing slash. */
  readonly publicUrl: string;
}

export interface LmsOauthInput {
  readonly LMS_OAUTH_URL?: string;
  readonly LMS_OAUTH_INTERNAL_URL?: string;
  readonly LMS_OAUTH_CLIENT_ID?: string;
  readonly LMS_OAUTH_CLIENT_SECRET?: string;
  readonly LMS_OAUTH_CLIENT_SECRET_FILE?: string;
  readonly PUBLIC_URL?: string;
  /** Whether the LMS's trust path is configured: the token the flow receives is verified by it. */
  readonly hasLmsTrustPath: boolean;
}

/** config.ts turns it into its ConfigError (importing that class here would be a cycle). */
export class LmsOauthSettingError extends Error {}

const bad = (name: string, why: string) => new LmsOauthSettingError(`Invalid configuration: ${name}: ${why}`);

/** An http(s) root: no query, fragment or credentials; a trailing slash dropped so paths can be appended. */
function root(name: string, value: string, opts: { pathAllowed: boolean }): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(name, 'not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(name, 'must be an http or https URL');
  if (url.username || url.password) throw bad(name, 'must not hold credentials');
  if (url.search || url.hash) throw bad(name, 'must not have a query or a fragment');
  if (!opts.pathAllowed && url.pathname !== '/') throw bad(name, "must be the service's root (scheme, host and port), without a path");
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/** Null when the flow is off (no client id); refuses a half configuration naming what is missing. */
export function parseLmsOauth(input: LmsOauthInput): LmsOauthSettings | null {
  const clientId = input.LMS_OAUTH_CLIENT_ID;
  if (clientId === undefined) {
    const orphans = (['LMS_OAUTH_URL', 'LMS_OAUTH_INTERNAL_URL', 'LMS_OAUTH_CLIENT_SECRET', 'LMS_OAUTH_CLIENT_SECRET_FILE'] as const).filter(
      (k) => input[k] !== undefined,
    );
    if (orphans.length > 0) {
      throw new LmsOauthSettingError(
        `Invalid configuration: ${orphans.join(', ')} set, but LMS_OAUTH_CLIENT_ID is not (the console's sign-in through the LMS is on only with a client id)`,
      );
    }
    return null;
  }
  const required = (name: 'LMS_OAUTH_URL' | 'PUBLIC_URL') => {
    const value = input[name];
    if (value === undefined) throw bad(name, 'required with LMS_OAUTH_CLIENT_ID (the console signs in through the LMS)');
    return value;
  };
  if (!input.hasLmsTrustPath) {
    throw bad('LMS_JWT_ISSUERS', "required with LMS_OAUTH_CLIENT_ID: the token the LMS gives the console is verified by the LMS's trust path");
  }
  const browserUrl = root('LMS_OAUTH_URL', required('LMS_OAUTH_URL'), { pathAllowed: true });
  const internalUrl =
    input.LMS_OAUTH_INTERNAL_URL === undefined ? browserUrl : root('LMS_OAUTH_INTERNAL_URL', input.LMS_OAUTH_INTERNAL_URL, { pathAllowed: true });
  const publicUrl = root('PUBLIC_URL', required('PUBLIC_URL'), { pathAllowed: false });
  if ((input.LMS_OAUTH_CLIENT_SECRET === undefined) === (input.LMS_OAUTH_CLIENT_SECRET_FILE === undefined)) {
    throw new LmsOauthSettingError(
      input.LMS_OAUTH_CLIENT_SECRET === undefined
        ? 'Invalid configuration: LMS_OAUTH_CLIENT_SECRET: required with LMS_OAUTH_CLIENT_ID (or LMS_OAUTH_CLIENT_SECRET_FILE naming a file that holds it)'
        : 'Invalid configuration: LMS_OAUTH_CLIENT_SECRET and LMS_OAUTH_CLIENT_SECRET_FILE: set only one of the two',
    );
  }
  let clientSecret = input.LMS_OAUTH_CLIENT_SECRET;
  if (input.LMS_OAUTH_CLIENT_SECRET_FILE !== undefined) {
    const file = input.LMS_OAUTH_CLIENT_SECRET_FILE;
    try {
      // A mounted secret file usually ends with a newline that is not part of the secret.
      clientSecret = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw bad('LMS_OAUTH_CLIENT_SECRET_FILE', `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (clientSecret === '') throw bad('LMS_OAUTH_CLIENT_SECRET_FILE', `${file} is empty`);
  }
  return Object.freeze({ browserUrl, internalUrl, clientId, clientSecret: clientSecret!, publicUrl });
}
