import type { Db } from 'mongodb';
import {
  COLLECTIONS,
  type CourseDoc,
  type GroupCourseDoc,
  type GroupDoc,
  type MembershipDoc,
  type PublicCourseDoc,
  type SiteConfigurationDoc,
  type UserDoc,
} from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { syncCourseFacts, syncUserGroups } from '../../src/domain/list-facts';

const EPOCH = '2020-01-01T00:00:00Z';

/**
 * Writes the read models (users, courses) and admin records of one organization straight
 * through its Tenant, as the event handlers and admin API would, for access-decision tests.
 */
export function accessSeed(db: Db, org: string) {
  const tenant = new Tenant(db, org);
  return {
    tenant,
    async user(id: number, flags: Partial<Pick<UserDoc, 'is_active' | 'is_staff' | 'is_site_admin'>> = {}): Promise<number> {
      const email = `user${id}@example.com`;
      await tenant.collection<UserDoc>(COLLECTIONS.users).insertOne({
        _id: String(id),
        id,
        username: `user${id}`,
        name: `User ${id}`,
        email,
        email_lower: email,
        is_active: true,
        is_staff: false,
        is_site_admin: false,
        event_time: EPOCH,
        grp: 0,
        member: 0,
        facts_v: 0,
        ...flags,
        listed: flags.is_site_admin ? 0 : 1,
      });
      return id;
    },
    async course(key: string): Promise<string> {
      await tenant
        .collection<CourseDoc>(COLLECTIONS.courses)
        .insertOne({ _id: key, id: key, name: `Course ${key}`, event_time: EPOCH, is_public: 0, linked: 0, facts_v: 0 });
      return key;
    },
    async group(name = 'Group'): Promise<number> {
      const id = await tenant.nextId('groups');
      await tenant.collection<GroupDoc>(COLLECTIONS.groups).insertOne({ _id: String(id), id, name, description: '' });
      return id;
    },
    async member(user: number, group: number): Promise<void> {
      const id = await tenant.nextId('memberships');
      await tenant.collection<MembershipDoc>(COLLECTIONS.memberships).insertOne({ _id: String(user), id, user, group, automatic: false });
      await syncUserGroups(tenant, [user]);
    },
    async link(course: string, group: number): Promise<void> {
      const id = await tenant.nextId('group_courses');
      await tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).insertOne({ _id: `${course}|${group}`, id, course, group });
      await syncCourseFacts(tenant, [course]);
    },
    async makePublic(course: string): Promise<void> {
      const id = await tenant.nextId('public_courses');
      await tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses).insertOne({ _id: course, id, course });
      await syncCourseFacts(tenant, [course]);
    },
    async flag(enabled: boolean): Promise<void> {
      await tenant
        .collection<SiteConfigurationDoc>(COLLECTIONS.siteConfigurations)
        .updateOne({ _id: org }, { $set: { ENABLE_COURSE_ACCESS_GROUPS: enabled } }, { upsert: true });
    },
  };
}
