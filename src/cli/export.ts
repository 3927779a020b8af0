import type { Db } from 'mongodb';
import { COLLECTIONS, type GroupCourseDoc, type GroupDoc, type MembershipDoc, type PublicCourseDoc, type RuleDoc, type TenantDoc } from '../db/collections';
import { Tenant } from '../db/tenant';
import { readSiteConfiguration } from '../features/site-configuration/queries';
import { CONFIG_VERSION, type ConfigDocument } from './config-document';

/** Every document of one of the organization's collections, by public id. */
async function all<T extends TenantDoc>(tenant: Tenant, name: (typeof COLLECTIONS)[keyof typeof COLLECTIONS]): Promise<T[]> {
  return (await tenant.collection<T>(name).find().sort({ id: 1 }).toArray()) as T[];
}

/** The organization's configuration as one document (src/cli/config-document.ts). */
export async function exportConfiguration(db: Db, org: string): Promise<ConfigDocument> {
  const tenant = new Tenant(db, org);
  const [site, groups, rules, links, publicCourses, memberships] = await Promise.all([
    readSiteConfiguration(tenant),
    all<GroupDoc>(tenant, COLLECTIONS.groups),
    all<RuleDoc>(tenant, COLLECTIONS.rules),
    all<GroupCourseDoc>(tenant, COLLECTIONS.groupCourses),
    all<PublicCourseDoc>(tenant, COLLECTIONS.publicCourses),
    all<MembershipDoc>(tenant, COLLECTIONS.memberships),
  ]);
  return {
    version: CONFIG_VERSION,
    organization: org,
    site_configuration: site,
    groups: groups.map((g) => ({ id: g.id, name: g.name, description: g.description })),
    membership_rules: rules.map((r) => ({ name: r.name, domain: r.domain, group: r.group })),
    group_courses: links.map((l) => ({ course: l.course, group: l.group })),
    public_courses: publicCourses.map((p) => ({ course: p.course })),
    memberships: memberships.map((m) => ({ user: m.user, group: m.group, automatic: m.automatic })),
  };
}
