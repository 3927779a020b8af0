export { API_PREFIX as API } from '../../src/http/openapi';

import { request } from 'node:http';
import { API_PREFIX as API } from '../../src/http/openapi';

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** A tiny HTTP client over fetch for the service under test. */
export function client(baseUrl: string, bearer?: string) {
  const call = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> => {
    const h: Record<string, string> = { ...headers };
    if (bearer) h.Authorization = `Bearer ${bearer}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + (path.startsWith('/') ? path : `${API}/${path}`), { method, headers: h, body: payload }).catch((err: Error) => {
      // fetch says only "fetch failed"; its cause says what (a reset, a refused connection).
      const cause = err.cause as (Error & { code?: string }) | undefined;
      throw new Error(`${method} ${path}: ${err.message}${cause ? ` (${cause.code ?? cause.message})` : ''}`, { cause: err });
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON (e.g. /metrics); keep the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
  return {
    get: <T = any>(path: string, headers?: Record<string, string>) => call<T>('GET', path, undefined, headers),
    post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => call<T>('POST', path, body, headers),
    patch: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => call<T>('PATCH', path, body, headers),
    put: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => call<T>('PUT', path, body, headers),
    delete: <T = any>(path: string, headers?: Record<string, string>) => call<T>('DELETE', path, undefined, headers),
    call,
  };
}

/**
 * A POST to the service on `port` whose headers are sent now and whose body is finished later
 * (`finish`): a request in flight, on a connection of its own.
 */
export function slowPost(port: number, pathname: string, token: string, body: string) {
  const req = request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: pathname,
    agent: false,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
  });
  const response = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  const connected = new Promise<void>((resolve) => req.on('socket', (s) => s.on('connect', () => resolve())));
  req.flushHeaders();
  req.write(body.slice(0, 5));
  return { connected, finish: () => req.end(body.slice(5)), response };
}
