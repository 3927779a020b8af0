import { readFile } from 'node:fs/promises';
import type { Db } from 'mongodb';
import { COLLECTIONS, type TenantDoc } from '../db/collections';
import { Tenant } from '../db/tenant';
import { courseBirth } from '../domain/courses';
import { createGroupCourse } from '../domain/group-courses';
import { createGroup } from '../domain/groups';
import { userExists } from '../domain/learners';
import { createRule } from '../domain/membership-rules';
import { importMembership } from '../domain/memberships';
import { createPublicCourse } from '../domain/public-courses';
import { updateSiteConfiguration } from '../domain/site-configuration';
import { Invalid, ServiceError } from '../errors';
import { ajv, describeErrors } from '../validation';
import { type ConfigDocument, configDocumentSchema } from './config-document';

/** The configuration file cannot be imported (unreadable, not an export, a target already configured): exit code 1. */
export class ImportConfigError extends ServiceError {
  readonly retriable = false;
}

export interface ImportConfigReport {
  created: { groups: number; membership_rules: number; group_courses: number; public_courses: number; memberships: number };
  /** What the target could not take: courses or users it does not know, rules or links it already has, members already in a group. */
  skipped: {
    courses: string[];
    users: number[];
    membership_rules: string[];
    group_courses: { course: string; group: number }[];
    memberships: number[];
  };
}

const validateDocument = ajv.compile<ConfigDocument>(configDocumentSchema);

/** The collections whose documents make an organization "not empty" (its site configuration does not). */
const CONFIGURED = [COLLECTIONS.groups, COLLECTIONS.rules, COLLECTIONS.groupCourses, COLLECTIONS.publicCourses, COLLECTIONS.memberships] as const;

/** What the REST API answers with a 400: the target refused this item, the import goes on. */
const refused = (err: unknown) => err instanceof Invalid;

/**
 * Restores an exported configuration into `org` through the same domain functions as the REST API:
 * every group gets an id claimed in the target and every reference is remapped. An organization
 * that already has configuration is refused unless `merge`.
 */
export async function importConfiguration(db: Db, org: string, path: string, opts: { merge: boolean }): Promise<ImportConfigReport> {
  let document: unknown;
  try {
    document = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new ImportConfigError(`cannot read ${path} as JSON: ${(err as NodeJS.ErrnoException).code ?? 'not valid JSON'}`);
  }
  if (!validateDocument(document)) throw new ImportConfigError(`${path} is not a configuration export: ${describeErrors(validateDocument.errors)}`);
  const config = document;
  const tenant = new Tenant(db, org);
  if (!opts.merge) {
    for (const name of CONFIGURED) {
      if (await tenant.collection<TenantDoc>(name).findOne({}, { projection: { _id: 1 } })) {
        throw new ImportConfigError(`organization ${org} already has ${name}: refusing to import into it without --merge`);
      }
    }
  }

  const report: ImportConfigReport = {
    created: { groups: 0, membership_rules: 0, group_courses: 0, public_courses: 0, memberships: 0 },
    skipped: { courses: [], users: [], membership_rules: [], group_courses: [], memberships: [] },
  };
  const missingCourses = new Set<string>();
  const groupIds = new Map<number, number>();
  for (const g of config.groups) {
    groupIds.set(g.id, (await createGroup(tenant, { name: g.name, description: g.description })).id);
    report.created.groups++;
  }
  // A reference to a group the file does not define cannot be remapped: the item is skipped.
  const group = (oldId: number) => groupIds.get(oldId);

  for (const r of config.membership_rules) {
    const target = group(r.group);
    try {
      if (target === undefined) throw new Invalid({});
      await createRule(tenant, { name: r.name, domain: r.domain, group: target });
      report.created.membership_rules++;
    } catch (err) {
      if (!refused(err)) throw err;
      report.skipped.membership_rules.push(r.domain);
    }
  }

  const courseKnown = async (key: string) => {
    if (missingCourses.has(key)) return false;
    const known = (await courseBirth(tenant, key)) !== null;
    if (!known) missingCourses.add(key);
    return known;
  };
  for (const l of config.group_courses) {
    const target = group(l.group);
    if (!(await courseKnown(l.course))) continue;
    try {
      if (target === undefined) throw new Invalid({});
      await createGroupCourse(tenant, { course: l.course, group: target });
      report.created.group_courses++;
    } catch (err) {
      if (!refused(err)) throw err;
      report.skipped.group_courses.push({ course: l.course, group: l.group });
    }
  }
  for (const p of config.public_courses) {
    if (!(await courseKnown(p.course))) continue;
    try {
      await createPublicCourse(tenant, { course: p.course });
      report.created.public_courses++;
    } catch (err) {
      if (!refused(err)) throw err; // already public: nothing to do
    }
  }

  for (const m of config.memberships) {
    const target = group(m.group);
    if (!(await userExists(tenant, m.user))) {
      report.skipped.users.push(m.user);
      continue;
    }
    // An entry of the learner's history, as one made through the API is, keeping whether a rule made it.
    if (target === undefined || !(await importMembership(tenant, { user: m.user, group: target, automatic: m.automatic }))) {
      report.skipped.memberships.push(m.user);
      continue;
    }
    report.created.memberships++;
  }

  await updateSiteConfiguration(tenant, config.site_configuration);
  report.skipped.courses = [...missingCourses].sort();
  return report;
}
