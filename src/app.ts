import Router from '@koa/router';
import Koa from 'koa';
import { consoleRoutes } from './console/route';
import { consoleSignInRoutes } from './console/sign-in/routes';
import { NotFound } from './errors';
import { adminFeatures, openFeatures } from './features';
import { accessLog } from './http/access-log';
import { attributeChanges } from './http/attribute-changes';
import { authenticate, createTokenVerifier } from './http/auth';
import { jsonBody } from './http/body';
import { errorMapping, toHttpError } from './http/error-responses';
import type { AppDeps } from './http/feature';
import { healthRoutes } from './http/health';
import { createLmsTokenVerifier } from './http/lms-tokens';
import { API_PREFIX, openApiDocument } from './http/openapi';
import { requestId } from './http/request-id';
import { servingGate } from './http/serving-gate';
import { adminTenant } from './http/tenancy';

/**
 * The router's allowedMethods() answers a method the path lacks with 405 and `Allow` (or 501
 * for a method no route uses); this gives that answer DRF's body, and a 405 either way.
 */
const methodNotAllowedBody: Koa.Middleware = async (ctx, next) => {
  await next();
  if (ctx.status === 405 || ctx.status === 501) {
    ctx.status = 405;
    ctx.body = { detail: `Method "${ctx.method}" not allowed.` };
  }
};

/** During shutdown every response tells the client to drop its keep-alive connection. */
const closeConnectionsWhileDraining =
  (isDraining: () => boolean): Koa.Middleware =>
  async (ctx, next) => {
    await next();
    if (isDraining()) ctx.set('Connection', 'close');
  };

/** Answers what no route took with 404 `{"detail": "Not found."}`, set rather than thrown. */
const notFound =
  (deps: AppDeps): Koa.Middleware =>
  (ctx) => {
    const { status, body } = toHttpError(new NotFound(), deps.log);
    ctx.status = status;
    ctx.body = body;
  };

/**
 * What every process serves, whatever its role: request ids, the access log, error mapping and
 * the operational endpoints. Forwarded headers count only with `TRUST_PROXY=on`, else any client
 * could choose the host written into `next`/`previous` links.
 */
function operationalApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.config.TRUST_PROXY === 'on' });
  app.use(closeConnectionsWhileDraining(deps.isDraining));
  app.use(requestId(deps.log));
  app.use(accessLog(deps.metrics));
  app.use(errorMapping(deps.log));
  app.use(healthRoutes(deps).routes());
  return app;
}

/** A consumer-only process's HTTP: /healthz, /readyz and /metrics, so probes and scrapes reach it too. */
export function createOperationsApp(deps: AppDeps): Koa {
  const app = operationalApp(deps);
  app.use(notFound(deps));
  return app;
}

/** The Koa application. Middleware order reads top to bottom. */
export function createApp(deps: AppDeps): Koa {
  const app = operationalApp(deps);
  const verify = createTokenVerifier(deps.config);
  const openapi = openApiDocument([...openFeatures, ...adminFeatures]);

  // The console's sign-in through the LMS (its callback verifies with the LMS's trust path alone),
  // then the console's page and modules (no token: the page asks for one).
  const { LMS_OAUTH, LMS_JWT_ISSUERS, LMS_JWT_PUBLIC_SIGNING_JWK_SET } = deps.config;
  const verifyLmsToken = LMS_JWT_ISSUERS && LMS_JWT_PUBLIC_SIGNING_JWK_SET ? createLmsTokenVerifier(LMS_JWT_ISSUERS, LMS_JWT_PUBLIC_SIGNING_JWK_SET) : null;
  const signInRouter = consoleSignInRoutes(
    LMS_OAUTH,
    verifyLmsToken,
    (LMS_JWT_ISSUERS ?? []).map((i) => i.ISSUER),
  );
  app.use(signInRouter.routes());
  const consoleRouter = consoleRoutes();
  app.use(consoleRouter.routes());

  const api = new Router({ prefix: API_PREFIX });
  api.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });
  // Authenticate, then parse the body: an anonymous caller learns nothing about body rules.
  api.use(authenticate(verify), jsonBody);
  for (const feature of openFeatures) feature.register(api, deps);

  const admin = new Router();
  admin.use(adminTenant(deps.db), attributeChanges);
  for (const feature of adminFeatures) feature.register(admin, deps);
  api.use(admin.routes(), admin.allowedMethods());

  app.use(servingGate(deps.notServing));
  app.use(methodNotAllowedBody);
  app.use(api.routes());
  app.use(api.allowedMethods());
  app.use(consoleRouter.allowedMethods());
  // Set, not thrown: allowedMethods() above turns this 404 into a 405 when the path exists.
  app.use(notFound(deps));
  return app;
}
