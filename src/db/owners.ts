import type { Db } from 'mongodb';
import { COLLECTIONS, type TenantDoc } from './collections';

/**
 * The question access decisions ask before an organization is known, answered by primary key:
 * which organization owns a course ("the organization is the course's"). The event core reads
 * learner and course records by key itself (user-records.ts, course-records.ts). Nothing else
 * reads across organizations.
 */
export function ownerLookup(db: Db) {
  return {
    async courseOrg(courseKey: string): Promise<string | null> {
      const doc = await db.collection<TenantDoc>(COLLECTIONS.courses).findOne({ _id: courseKey }, { projection: { org: 1 } });
      return doc?.org ?? null;
    },
    /** The organization of each known course of `courseKeys`, in one query (an access batch). */
    async courseOrgs(courseKeys: readonly string[]): Promise<Map<string, string>> {
      if (courseKeys.length === 0) return new Map();
      const docs = await db
        .collection<TenantDoc>(COLLECTIONS.courses)
        .find({ _id: { $in: [...new Set(courseKeys)] } }, { projection: { org: 1 } })
        .toArray();
      return new Map(docs.map((d) => [d._id, d.org]));
    },
  };
}
