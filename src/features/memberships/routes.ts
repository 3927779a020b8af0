import type Router from '@koa/router';
import { createMembership, deleteMembership, updateMembership } from '../../domain/memberships';
import { queryParser } from '../../http/query';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { membershipQueries } from './queries';
import { membershipCreateSchema, membershipListQuerySchema, membershipPatchSchema } from './schema';

const parseCreate = validator(membershipCreateSchema);
const parseListQuery = queryParser(membershipListQuerySchema);
const parsePatch = validator(membershipPatchSchema);

export function registerMembershipRoutes(router: Router): void {
  resourceRoutes(router, '/memberships', {
    queries: membershipQueries,
    query: parseListQuery,
    create: { parse: parseCreate, write: createMembership },
    patch: { parse: parsePatch, write: updateMembership },
    remove: (tenant, id) => deleteMembership(tenant, { id }),
  });
}
