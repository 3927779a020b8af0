import type Router from '@koa/router';
import { resourceRoutes } from '../../http/resource-routes';
import { validator } from '../../validation';
import { rulesRepository } from './repository';
import { ruleCreateSchema, rulePatchSchema } from './schema';

const parseCreate = validator(ruleCreateSchema);
const parsePatch = validator(rulePatchSchema);

export function registerRuleRoutes(router: Router): void {
  resourceRoutes(router, '/membership-rules', {
    repository: rulesRepository,
    create: parseCreate,
    patch: parsePatch,
    remove: true,
  });
}
