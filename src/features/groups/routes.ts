import type Router from '@koa/router';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { groupsRepository } from './repository';
import { groupCreateSchema, groupPatchSchema } from './schema';

const parseCreate = validator(groupCreateSchema);
const parsePatch = validator(groupPatchSchema);

export function registerGroupRoutes(router: Router): void {
  resourceRoutes(router, '/course-access-groups', {
    repository: groupsRepository,
    create: parseCreate,
    patch: parsePatch,
    remove: true,
  });
}
