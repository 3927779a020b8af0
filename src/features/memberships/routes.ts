import type Router from '@koa/router';
import { queryParser } from '../../http/query';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { membershipsRepository } from './repository';
import { membershipCreateSchema, membershipListQuerySchema, membershipPatchSchema } from './schema';

const parseCreate = validator(membershipCreateSchema);
const parsePatch = validator(membershipPatchSchema);
const parseListQuery = queryParser(membershipListQuerySchema);

export function registerMembershipRoutes(router: Router): void {
  resourceRoutes(router, '/memberships', {
    repository: membershipsRepository,
    query: parseListQuery,
    create: parseCreate,
    patch: parsePatch,
    remove: true,
  });
}
