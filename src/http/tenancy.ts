import type { ParsedUrlQuery } from 'node:querystring';
import type { Middleware } from 'koa';
import type { Db } from 'mongodb';
import { Tenant } from '../db/tenant';
import { isSiteAdminOf, type Principal } from './auth';
import { forbidden } from './error-responses';
import { lastValues } from './query';

/**
 * The organization of an admin request: the token's `org`, or `organization_uuid` for platform
 * staff and for an LMS administrator naming one of theirs (authenticate() refused anyone else).
 */
function requestOrganization(principal: Principal, query: ParsedUrlQuery | Record<string, unknown>): string | null {
  const named = lastValues(query).organization_uuid;
  if (typeof named === 'string' && named !== '' && (principal.isStaff || principal.administeredOrgs.includes(named))) return named;
  return principal.org;
}

/**
 * Admin endpoints: platform staff, or a site administrator of the request's organization.
 * Puts the request's `Tenant` in `ctx.state.tenant`; routes reach data only through it.
 */
export function adminTenant(db: Db): Middleware {
  return async function requireOrganizationAdmin(ctx, next) {
    const principal: Principal = ctx.state.principal;
    const org = requestOrganization(principal, ctx.query);
    if (!org && principal.administeredOrgs.length > 1) {
      // docs/decisions.md: an LMS administrator of several organizations names one; none is assumed.
      throw forbidden('You administer several organizations; name one with organization_uuid.');
    }
    if (!org) throw forbidden('The token names no organization.');
    if (!principal.isStaff && !isSiteAdminOf(principal, org)) throw forbidden();
    ctx.state.tenant = new Tenant(db, org);
    await next();
  };
}
