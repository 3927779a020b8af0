import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The stand-in LMS OAuth2 provider (test/lms-oauth/README.md) as a child process: Django with
 * the LMS's django-oauth-toolkit, in the Python 3.11 environment scripts/lms-oauth.sh makes.
 */
const ROOT = path.resolve(__dirname, '../..');
export const LMS_CLIENT_ID = 'course-access-groups-sso';
export const LMS_CLIENT_SECRET = 'stand-in-client-secret-0123456789';
export const LMS_PASSWORD = 'lms-stand-in-password';

export interface LmsStandIn {
  url: string;
  /** LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET for the service. */
  issuers: string;
  publicKeySet: string;
  close(): Promise<void>;
}

export const lmsPython = () => process.env.LMS_OAUTH_PYTHON || execFileSync('bash', [path.join(ROOT, 'scripts/lms-oauth.sh')], { encoding: 'utf8' }).trim();

export async function startLmsStandIn(o: {
  port: number;
  host?: string;
  redirectUris: string[];
  consoleLoginUrl?: string;
  redirectWhitelist?: string[];
}): Promise<LmsStandIn> {
  const args = [path.join(ROOT, 'test/lms-oauth/serve.py'), '--host', o.host ?? '127.0.0.1', '--port', String(o.port)];
  args.push('--client-id', LMS_CLIENT_ID, '--client-secret', LMS_CLIENT_SECRET);
  for (const uri of o.redirectUris) args.push('--redirect-uri', uri);
  if (o.consoleLoginUrl) args.push('--console-login-url', o.consoleLoginUrl);
  for (const host of o.redirectWhitelist ?? []) args.push('--redirect-whitelist', host);
  const child: ChildProcess = spawn(lmsPython(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the stand-in LMS exited (${code}) before it listened: ${stderr}`)));
  });
  const ready = JSON.parse(line) as { url: string; issuers: string; publicKeySet: string };
  return {
    ...ready,
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** A signed-in LMS session (Django's login form, its CSRF cookie), as the cookies a browser would send. */
export async function lmsSession(lmsUrl: string, username: string): Promise<string> {
  const form = await fetch(`${lmsUrl}/login`);
  const csrf = /lms_csrftoken=([^;]+)/.exec(form.headers.getSetCookie().join('; '))?.[1];
  if (!csrf) throw new Error('the stand-in LMS set no CSRF cookie');
  const res = await fetch(`${lmsUrl}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: `lms_csrftoken=${csrf}` },
    body: new URLSearchParams({ username, password: LMS_PASSWORD, csrfmiddlewaretoken: csrf, next: '/' }),
  });
  const session = /lms_sessionid=([^;]+)/.exec(res.headers.getSetCookie().join('; '))?.[1];
  if (res.status !== 302 || !session) throw new Error(`the stand-in LMS did not sign ${username} in (HTTP ${res.status})`);
  return `lms_sessionid=${session}`;
}
