import type Router from '@koa/router';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { membershipsRepository } from './repository';
import { membershipCreateSchema, membershipPatchSchema } from './schema';

const parseCreate = validator(membershipCreateSchema);
const parsePatch = validator(membershipPatchSchema);

export function registerMembershipRoutes(router: Router): void {
  resourceRoutes(router, '/memberships', {
    repository: membershipsRepository,
    create: parseCreate,
    patch: parsePatch,
    remove: true,
  });
}
