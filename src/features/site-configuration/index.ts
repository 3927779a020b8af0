import type { Feature } from '../../http/feature';
import { commonResponses, operations, responses } from '../../http/openapi';
import { plainQuerySchema, queryParameters } from '../../http/query';
import { registerSiteConfigurationRoutes } from './routes';
import { siteConfigurationPatchSchema, siteConfigurationSchema } from './schema';

const tags = ['site-configuration'];
// One configuration per organization, always there (defaults until changed): no 404.
const { '404': _patchNotFound, ...patchResponses } = operations.patch(
  tags,
  'updateSiteConfiguration',
  siteConfigurationPatchSchema,
  siteConfigurationSchema,
).responses;

export const siteConfigurationFeature: Feature = {
  register: registerSiteConfigurationRoutes,
  openapi: {
    '/site-configuration/': {
      parameters: queryParameters(plainQuerySchema),
      get: {
        tags,
        operationId: 'retrieveSiteConfiguration',
        responses: { '200': responses.ok(siteConfigurationSchema), ...commonResponses },
      },
      patch: { ...operations.patch(tags, 'updateSiteConfiguration', siteConfigurationPatchSchema, siteConfigurationSchema), responses: patchResponses },
    },
  },
};
