/**
 * `npm run token -- --site-admin org-a`: a development JWT and the console link that signs in
 * with it. Signed with JWT_SECRET, or the development secret `npm run dev` uses.
 *
 *   --site-admin ORG   a site administrator of ORG
 *   --staff            platform staff (`--org ORG` adds an `org` claim, the console's default)
 *   --service          the LMS backend (role `service`: access decisions for any organization),
 *                      for development: the Open edX plugin's SERVICE_TOKEN setting, short-lived like
 *                      any other (the plugin signs its calls with the LMS's own short-lived JWTs otherwise)
 *   --user-id N        the user_id claim (default 1)
 *   --expires SPAN     lifetime: 30m, 1h, 2d... (default 1h)
 */
import { SignJWT } from 'jose';
import { CONSOLE_PREFIX } from '../src/console/route';

export const DEV_SECRET = 'dev-secret-change-me-0123456789';

const USAGE = 'usage: npm run token -- (--site-admin ORG | --staff [--org ORG] | --service) [--user-id N] [--expires 1h]';

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

export function parseArgs(argv: string[]): { claims: Record<string, unknown>; expires: string } {
  let siteAdmin: string | undefined;
  let staff = false;
  let service = false;
  let org: string | undefined;
  let userId = 1;
  let expires = '1h';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) fail(`${arg} needs a value`);
      return v;
    };
    if (arg === '--site-admin') siteAdmin = value();
    else if (arg === '--staff') staff = true;
    else if (arg === '--service') service = true;
    else if (arg === '--org') org = value();
    else if (arg === '--user-id') {
      const v = value();
      if (!/^[1-9]\d{0,15}$/.test(v)) fail('--user-id is a positive integer');
      userId = Number(v);
    } else if (arg === '--expires') {
      expires = value();
      if (!/^\d+\s*(s|m|h|d)$/.test(expires)) fail('--expires is a number and a unit: 30s, 15m, 1h, 2d');
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else fail(`unknown argument: ${arg}`);
  }
  if ([siteAdmin !== undefined, staff, service].filter(Boolean).length !== 1) fail('give exactly one of --site-admin ORG, --staff and --service');
  if (org !== undefined && !staff) fail('--org goes with --staff');
  const claims: Record<string, unknown> = { user_id: userId };
  if (siteAdmin !== undefined) Object.assign(claims, { org: siteAdmin, roles: ['site_admin'] });
  else if (service) Object.assign(claims, { roles: ['service'] });
  else Object.assign(claims, { administrator: true }, org ? { org } : {});
  return { claims, expires };
}

async function main(): Promise<void> {
  const { claims, expires } = parseArgs(process.argv.slice(2));
  const secret = process.env.JWT_SECRET || DEV_SECRET;
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(expires)
    .sign(new TextEncoder().encode(secret));
  const port = process.env.PORT || '8000';
  // No sign-in link: the console signs in from no link (docs/console.md); the token is pasted there.
  process.stdout.write(`${token}\nhttp://127.0.0.1:${port}${CONSOLE_PREFIX}/\n`);
  if (!process.env.JWT_SECRET) process.stderr.write('(signed with the development secret of `npm run dev`)\n');
}

if (require.main === module) void main();
