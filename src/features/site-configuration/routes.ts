import type Router from '@koa/router';
import { updateSiteConfiguration } from '../../domain/site-configuration';
import { validator } from '../../validation';
import { readSiteConfiguration } from './queries';
import { siteConfigurationPatchSchema } from './schema';

const parsePatch = validator(siteConfigurationPatchSchema);

export function registerSiteConfigurationRoutes(router: Router): void {
  const path = '/site-configuration';

  router.get(path, async (ctx) => {
    ctx.body = await readSiteConfiguration(ctx.state.tenant);
  });

  router.patch(path, async (ctx) => {
    await updateSiteConfiguration(ctx.state.tenant, parsePatch(ctx.state.body));
    ctx.body = await readSiteConfiguration(ctx.state.tenant);
  });
}
