import type Router from '@koa/router';
import type { Db } from 'mongodb';
import type { Config } from '../config';
import type { Logger } from '../log';
import type { Metrics } from '../metrics';

/** What the HTTP side of the service is built from. */
export interface AppDeps {
  config: Config;
  log: Logger;
  db: Db;
  metrics: Metrics;
  /** Names of the dependencies that are not ready (empty when ready). */
  notReady: () => Promise<string[]>;
  /** Why some of them are not ready, by name, when it is known (a setting to fix): shown by /readyz. */
  notReadyReasons?: () => Record<string, string>;
  /** True once shutdown began: responses then close their connection. */
  isDraining: () => boolean;
  /** Why the API may not be served yet (stored data being upgraded, or of a newer version's shape); null: it may. */
  notServing: () => string | null;
}

/** OpenAPI 3.1 path items, keyed by path relative to the API prefix (e.g. `/course-access-groups/{id}/`). */
export type OpenApiPaths = Record<string, Record<string, unknown>>;

/**
 * A resource of the API. Its folder owns its schemas, read-only queries and routes; `register` adds
 * its routes to a router that already authenticated the caller (and, for admin features,
 * resolved `ctx.state.tenant`).
 */
export interface Feature {
  register(router: Router, deps: AppDeps): void;
  openapi: OpenApiPaths;
}
