import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type { Context } from 'koa';
import { NotFound } from '../errors';
import { HttpError } from '../http/error-responses';

export const CONSOLE_PREFIX = '/course_access_groups/console';

/**
 * Every console response. The page runs only its own scripts and styles, talks only to its own
 * origin, cannot be framed, and Trusted Types make any HTML-from-a-string sink throw, so data is
 * only ever rendered as text.
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  // Revalidated every time (ETag): a new build is picked up at once, and nothing is a secret.
  'Cache-Control': 'no-cache',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Where `npm run build` puts the console (scripts/build-console.cjs): `dist/console` of the package. */
export function defaultConsoleDir(from = __dirname): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return path.join(dir, 'dist', 'console');
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
  mtimeMs: number;
}

/**
 * The console's files, read from `dir` and kept while unchanged on disk. Only the flat list of
 * built files with a known type is served: a name is looked up, never joined into a path.
 */
function assetStore(dir: string) {
  const cache = new Map<string, Asset>();
  return (name: string): Asset | null => {
    const type = TYPES[path.extname(name)];
    if (!type || !/^[a-z0-9-]+\.[a-z]+$/.test(name)) return null;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      throw new HttpError(503, { detail: 'The console is not built: run `npm run build` (or `npm run build:console`).' });
    }
    if (!names.includes(name)) return null;
    const file = path.join(dir, name);
    const { mtimeMs } = statSync(file);
    const cached = cache.get(name);
    if (cached && cached.mtimeMs === mtimeMs) return cached;
    const body = readFileSync(file);
    const asset = { body, type, mtimeMs, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    cache.set(name, asset);
    return asset;
  };
}

/**
 * The console's route (docs/console.md): its page and modules under `/course_access_groups/console/`,
 * without a token (the page asks for one; every API call carries it).
 */
export function consoleRoutes(opts: { dir?: string } = {}): Router {
  const asset = assetStore(opts.dir ?? defaultConsoleDir());
  const router = new Router({ prefix: CONSOLE_PREFIX });

  const send = (ctx: Context, name: string) => {
    ctx.set(CONSOLE_HEADERS);
    const found = asset(name);
    if (!found) throw new NotFound();
    ctx.type = found.type;
    ctx.etag = found.etag;
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = found.body;
  };

  // Relative asset URLs need the trailing slash.
  router.get('/', (ctx) => {
    if (!ctx.path.endsWith('/')) {
      ctx.set(CONSOLE_HEADERS);
      ctx.status = 301;
      ctx.redirect(`${CONSOLE_PREFIX}/`);
      return;
    }
    send(ctx, 'index.html');
  });
  router.get('/:file', (ctx) => send(ctx, ctx.params.file ?? ''));
  return router;
}
