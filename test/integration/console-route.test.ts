// The console's route: its files with their security headers, no token needed, nothing else
// reachable through it, and the built page referring only to files the route serves.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import { CONSOLE_HEADERS, consoleRoutes } from '../../src/console/route';
import { errorMapping } from '../../src/http/error-responses';
import { createLogger } from '../../src/log';
import { ensureConsoleBuilt } from '../helpers/browser';
import { client } from '../helpers/http';
import { startTestService, type TestService } from '../helpers/stack';

const PREFIX = '/course_access_groups/console';
let service: TestService;
let http: ReturnType<typeof client>;

beforeAll(async () => {
  ensureConsoleBuilt();
  service = await startTestService();
  http = client(service.baseUrl);
});
afterAll(() => service.close());

test('the page is served without a token, with a strict CSP, nosniff and no referrer', async () => {
  const res = await http.get(`${PREFIX}/`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy')!;
  for (const directive of [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
  ]) {
    expect(csp).toContain(directive);
  }
  expect(csp).not.toContain('unsafe');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.body).toContain('<script type="module" src="main.js"></script>');
});

test('the page has no inline script or style, and every file it refers to is served with its type', async () => {
  const html: string = (await http.get(`${PREFIX}/`)).body;
  expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  expect(html).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
  const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(refs.sort()).toEqual(['console.css', 'favicon.svg', 'main.js']);
  const types: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' };
  for (const ref of refs) {
    const res = await http.get(`${PREFIX}/${ref}`);
    expect([ref, res.status]).toEqual([ref, 200]);
    expect(res.headers.get('content-type')).toBe(types[ref.split('.').pop()!]);
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_HEADERS['Content-Security-Policy']);
  }
  // Every module main.js imports (transitively) is served too: relative ES module imports only.
  const seen = new Set<string>();
  const queue = ['main.js'];
  while (queue.length > 0) {
    const name = queue.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const res = await http.get(`${PREFIX}/${name}`);
    expect([name, res.status]).toEqual([name, 200]);
    const imports = [...String(res.body).matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]!);
    for (const spec of imports) {
      expect(spec).toMatch(/^\.\/[a-z-]+\.js$/);
      queue.push(spec.slice(2));
    }
  }
  expect(seen.size).toBeGreaterThan(10);
});

test('without the trailing slash it redirects (relative URLs need it); ETag revalidation answers 304', async () => {
  const res = await fetch(`${service.baseUrl}${PREFIX}`, { redirect: 'manual' });
  expect(res.status).toBe(301);
  expect(res.headers.get('location')).toBe(`${PREFIX}/`);
  const first = await fetch(`${service.baseUrl}${PREFIX}/main.js`);
  const etag = first.headers.get('etag')!;
  expect(etag).toMatch(/^"[\w-]+"$/);
  expect(first.headers.get('cache-control')).toBe('no-cache');
  // node:http, as fetch adds `Cache-Control: no-cache` to a conditional request (a browser's cache does not).
  const status = await new Promise<number | undefined>((resolve, reject) => {
    request(`${service.baseUrl}${PREFIX}/main.js`, { headers: { 'If-None-Match': etag } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    })
      .on('error', reject)
      .end();
  });
  expect(status).toBe(304);
});

test.each([
  ['an unknown file', `${PREFIX}/nope.js`, 404],
  ['a source file', `${PREFIX}/main.ts`, 404],
  ['a path outside, encoded', `${PREFIX}/..%2Fpackage.json`, 404],
  ['a path outside, double-encoded', `${PREFIX}/%252e%252e%252fpackage.json`, 404],
  ['a sub-folder', `${PREFIX}/app/main.js`, 404],
  ['a hidden name', `${PREFIX}/.env`, 404],
])('%s is a 404', async (_what, url, status) => {
  const res = await http.get(url);
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ detail: 'Not found.' });
});

test('methods other than GET and HEAD are a 405 with Allow', async () => {
  const res = await http.post(`${PREFIX}/`, {});
  expect(res.status).toBe(405);
  expect(res.headers.get('allow')).toBe('HEAD, GET');
  expect((await fetch(`${service.baseUrl}${PREFIX}/`, { method: 'HEAD' })).status).toBe(200);
});

test('the access log records the route pattern, never the file or a query string', async () => {
  const lines: string[] = [];
  const app = new Koa();
  const log = createLogger('info', { write: (line: string) => void lines.push(line) });
  app.use(async (ctx, next) => {
    await next();
    log.info({ route: (ctx as { _matchedRoute?: string })._matchedRoute }, 'request');
  });
  app.use(consoleRoutes().routes());
  const server = app.listen(0);
  const port = (server.address() as { port: number }).port;
  await fetch(`http://127.0.0.1:${port}${PREFIX}/main.js?email=ada@example.com`);
  server.close();
  expect(lines.join('')).toContain(`"route":"${PREFIX}/:file"`);
  expect(lines.join('')).not.toContain('ada@example.com');
});

test('a service whose console is not built says so (503), and the API is unaffected', async () => {
  const empty = mkdtempSync(path.join(tmpdir(), 'console-'));
  rmSync(empty, { recursive: true });
  const app = new Koa();
  app.use(errorMapping(createLogger('silent')));
  app.use(consoleRoutes({ dir: empty }).routes());
  const server = app.listen(0);
  const port = (server.address() as { port: number }).port;
  const res = await fetch(`http://127.0.0.1:${port}${PREFIX}/`);
  server.close();
  expect(res.status).toBe(503);
  expect(await res.json()).toEqual({ detail: 'The console is not built: run `npm run build` (or `npm run build:console`).' });
  expect((await http.get('/course_access_groups/api/v1/openapi.json')).status).toBe(200);
});

test('a file changed on disk is served changed (a rebuild needs no restart)', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'console-'));
  writeFileSync(path.join(dir, 'index.html'), 'one');
  const app = new Koa();
  app.use(consoleRoutes({ dir }).routes());
  const server = app.listen(0);
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}${PREFIX}/`;
  expect(await (await fetch(url)).text()).toBe('one');
  await new Promise((r) => setTimeout(r, 20));
  writeFileSync(path.join(dir, 'index.html'), 'two!');
  expect(await (await fetch(url)).text()).toBe('two!');
  server.close();
  rmSync(dir, { recursive: true });
});
