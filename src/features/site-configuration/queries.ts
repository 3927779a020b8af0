import { COLLECTIONS, type SiteConfigurationDoc } from '../../db/collections';
import type { Tenant } from '../../db/tenant';
import type { Infer } from '../../validation';
import type { siteConfigurationSchema } from './schema';

type SiteConfiguration = Infer<typeof siteConfigurationSchema>;

const DEFAULTS: SiteConfiguration = { ENABLE_COURSE_ACCESS_GROUPS: false };

/** The organization's configuration, defaults until changed (src/domain/site-configuration.ts writes it). */
export async function readSiteConfiguration(tenant: Tenant): Promise<SiteConfiguration> {
  // The document's `_id` is the organization.
  const doc = await tenant.collection<SiteConfigurationDoc>(COLLECTIONS.siteConfigurations).findOne({ _id: tenant.org });
  return { ENABLE_COURSE_ACCESS_GROUPS: doc?.ENABLE_COURSE_ACCESS_GROUPS ?? DEFAULTS.ENABLE_COURSE_ACCESS_GROUPS };
}
