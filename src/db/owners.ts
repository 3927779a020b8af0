import type { Db } from 'mongodb';
import { COLLECTIONS, type TenantDoc, type UserDoc } from './collections';
import { readInPieces } from './dialect';

/**
 * The two questions asked before an organization is known, answered by primary key: which
 * organization owns a course (access decisions: "the organization is the course's") and which
 * owns a user (event handlers upserting a user that may have moved, the import telling new users
 * from known ones). Nothing else reads across organizations.
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
    async userOrg(userId: number): Promise<string | null> {
      const doc = await db.collection<TenantDoc>(COLLECTIONS.users).findOne({ _id: String(userId) }, { projection: { org: 1 } });
      return doc?.org ?? null;
    },
    /**
     * The organization of each known user of `userIds` (an import batch: is a user new
     * anywhere?). By `_id` alone: with the organization in the filter as well, SQLite's planner
     * picks the organization's index for a long `$in` and reads every user of it.
     */
    async userOrgs(userIds: readonly number[]): Promise<Map<number, string>> {
      const ids = [...new Set(userIds)].map(String);
      const docs = await readInPieces(ids, (piece) =>
        db
          .collection<TenantDoc>(COLLECTIONS.users)
          .find({ _id: { $in: piece } }, { projection: { org: 1 } })
          .toArray(),
      );
      return new Map(docs.map((d) => [Number(d._id), d.org]));
    },
    /** The records of `userIds`, whichever organization holds each (`org` says which), by `_id` alone as userOrgs. */
    async userRecords(userIds: readonly number[]): Promise<Map<number, UserDoc>> {
      const ids = [...new Set(userIds)].map(String);
      const docs = await readInPieces(ids, (piece) =>
        db
          .collection<UserDoc>(COLLECTIONS.users)
          .find({ _id: { $in: piece } })
          .toArray(),
      );
      return new Map(docs.map((d) => [Number(d._id), d]));
    },
  };
}
