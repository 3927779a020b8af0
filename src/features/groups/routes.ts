import type Router from '@koa/router';
import { createGroup, deleteGroup, updateGroup } from '../../domain/groups';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { groupQueries } from './queries';
import { groupCreateSchema, groupPatchSchema } from './schema';

const parseCreate = validator(groupCreateSchema);
const parsePatch = validator(groupPatchSchema);

export function registerGroupRoutes(router: Router): void {
  resourceRoutes(router, '/course-access-groups', {
    queries: groupQueries,
    create: { parse: parseCreate, write: createGroup },
    patch: { parse: parsePatch, write: updateGroup },
    // With its memberships, rules and course links.
    remove: deleteGroup,
  });
}
