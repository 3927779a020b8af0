import { COLLECTIONS, type SiteConfigurationDoc } from '../db/collections';
import type { Tenant } from '../db/tenant';

/**
 * Changes the organization's configuration (docs/api.md, `site-configuration`). One atomic
 * upsert: the document (`_id`: the organization) is created by the first change.
 */
export async function updateSiteConfiguration(tenant: Tenant, patch: { ENABLE_COURSE_ACCESS_GROUPS?: boolean }): Promise<void> {
  if (patch.ENABLE_COURSE_ACCESS_GROUPS === undefined) return;
  await tenant
    .collection<SiteConfigurationDoc>(COLLECTIONS.siteConfigurations)
    .updateOne({ _id: tenant.org }, { $set: { ENABLE_COURSE_ACCESS_GROUPS: patch.ENABLE_COURSE_ACCESS_GROUPS } }, { upsert: true });
}
