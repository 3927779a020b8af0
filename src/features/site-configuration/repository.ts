import { COLLECTIONS, type SiteConfigurationDoc } from '../../db/collections';
import type { Tenant } from '../../db/tenant';
import type { Infer } from '../../validation';
import type { siteConfigurationPatchSchema, siteConfigurationSchema } from './schema';

export type SiteConfiguration = Infer<typeof siteConfigurationSchema>;

const DEFAULTS: SiteConfiguration = { ENABLE_COURSE_ACCESS_GROUPS: false };

export function siteConfigurationRepository(tenant: Tenant) {
  const configurations = tenant.collection<SiteConfigurationDoc>(COLLECTIONS.siteConfigurations);
  /** The document's `_id` is the organization. */
  const _id = tenant.org;

  const get = async (): Promise<SiteConfiguration> => {
    const doc = await configurations.findOne({ _id });
    return { ENABLE_COURSE_ACCESS_GROUPS: doc?.ENABLE_COURSE_ACCESS_GROUPS ?? DEFAULTS.ENABLE_COURSE_ACCESS_GROUPS };
  };

  return {
    get,

    /** One atomic upsert: the document is created by the first change. */
    async update(patch: Infer<typeof siteConfigurationPatchSchema>): Promise<SiteConfiguration> {
      if (patch.ENABLE_COURSE_ACCESS_GROUPS === undefined) return get();
      await configurations.updateOne({ _id }, { $set: { ENABLE_COURSE_ACCESS_GROUPS: patch.ENABLE_COURSE_ACCESS_GROUPS } }, { upsert: true });
      return get();
    },
  };
}
