import type Router from '@koa/router';
import { validator } from '../../validation';
import { siteConfigurationRepository } from './repository';
import { siteConfigurationPatchSchema } from './schema';

const parsePatch = validator(siteConfigurationPatchSchema);

export function registerSiteConfigurationRoutes(router: Router): void {
  const path = '/site-configuration';

  router.get(path, async (ctx) => {
    ctx.body = await siteConfigurationRepository(ctx.state.tenant).get();
  });

  router.patch(path, async (ctx) => {
    ctx.body = await siteConfigurationRepository(ctx.state.tenant).update(parsePatch(ctx.state.body));
  });
}
