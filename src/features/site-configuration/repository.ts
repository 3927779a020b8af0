import { COLLECTIONS, type SiteConfigurationDoc } from '../../db/collections';
import type { Tenant } from '../../db/tenant';
import { isDuplicateKey } from '../../http/errors';
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

    /**
     * Update, else insert; an insert that loses a race to another one (E11000) is followed by
     * the update it should have been. No upsert: FerretDB v1 does not make one atomic.
     */
    async update(patch: Infer<typeof siteConfigurationPatchSchema>): Promise<SiteConfiguration> {
      if (patch.ENABLE_COURSE_ACCESS_GROUPS === undefined) return get();
      const set = { ENABLE_COURSE_ACCESS_GROUPS: patch.ENABLE_COURSE_ACCESS_GROUPS };
      if ((await configurations.updateOne({ _id }, { $set: set })).matchedCount === 0) {
        try {
          await configurations.insertOne({ _id, ...DEFAULTS, ...set });
        } catch (err) {
          if (!isDuplicateKey(err)) throw err;
          await configurations.updateOne({ _id }, { $set: set });
        }
      }
      return get();
    },
  };
}
