import type { Db } from 'mongodb';
import {
  COLLECTIONS,
  type CollectionName,
  type GroupCourseDoc,
  type MembershipDoc,
  type PublicCourseDoc,
  type SiteConfigurationDoc,
  type TenantDoc,
  type UserDoc,
} from '../../db/collections';
import { ownerLookup } from '../../db/owners';
import { Tenant, type TenantCollection } from '../../db/tenant';
import { type AccessFacts, needsLink, needsUser, type UserFacts } from '../../domain/access-decisions';
import type { FactsCache, FactsView } from './cache';

interface Learner {
  user: UserFacts | null;
  group: number | null;
}

/** Whether the caller may ask about a course of `org`; a course it may not is answered as unknown. */
export type OrgFilter = (org: string) => boolean;

/**
 * Reads the facts of an access decision (docs/api.md) with a number of round trips that does not grow with the batch:
 * the change log (when caching), the courses' organizations, then per organization the flag,
 * the public records and the learner (user and membership) in parallel (the learner only if
 * needed, when the first two are cached), then the links of the learner's group to the courses
 * still undecided. Each step asks only for what the cache lacks, by `_id` (one `$in` for several).
 */
/** Past this many links, an organization's link table is not held in memory. */
const MAX_CACHED_LINKS = 200_000;

export function accessQueries(db: Db, cache: FactsCache, opts: { maxCachedLinks?: number } = {}) {
  const maxCachedLinks = opts.maxCachedLinks ?? MAX_CACHED_LINKS;
  const owners = ownerLookup(db);

  async function courseOrgs(view: FactsView, keys: string[]): Promise<Map<string, string | null>> {
    const out = new Map<string, string | null>();
    const missing: string[] = [];
    for (const key of keys) {
      const known = view.get<string | null>(COLLECTIONS.courses, key);
      if (known === undefined) missing.push(key);
      else out.set(key, known);
    }
    if (missing.length > 0) {
      const found = await owners.courseOrgs(missing);
      for (const key of missing) out.set(key, found.get(key) ?? null);
    }
    for (const key of missing) view.set(COLLECTIONS.courses, key, out.get(key) ?? null);
    return out;
  }

  /** Which of `ids` exist in `collection`, reading only those the cache does not know. */
  async function existing<T extends TenantDoc>(view: FactsView, name: CollectionName, collection: TenantCollection<T>, ids: string[]): Promise<Set<string>> {
    const present = new Set<string>();
    const missing: string[] = [];
    for (const id of ids) {
      const known = view.get<boolean>(name, `${collection.org}|${id}`);
      if (known === undefined) missing.push(id);
      else if (known) present.add(id);
    }
    if (missing.length > 0) {
      for (const id of (await collection.findByIds(missing, { projection: { _id: 1 } })).keys()) present.add(id);
    }
    for (const id of missing) view.set(name, `${collection.org}|${id}`, present.has(id));
    return present;
  }

  async function featureEnabled(view: FactsView, tenant: Tenant): Promise<boolean> {
    let enabled = view.get<boolean>(COLLECTIONS.siteConfigurations, tenant.org);
    if (enabled === undefined) {
      const config = await tenant
        .collection<SiteConfigurationDoc>(COLLECTIONS.siteConfigurations)
        .findById(tenant.org, { projection: { ENABLE_COURSE_ACCESS_GROUPS: 1 } });
      enabled = config?.ENABLE_COURSE_ACCESS_GROUPS === true;
      view.set(COLLECTIONS.siteConfigurations, tenant.org, enabled);
    }
    return enabled;
  }

  /** The learner's user record and group; each half cached against its own collection. */
  async function learner(view: FactsView, tenant: Tenant, userId: number): Promise<Learner> {
    const key = `${tenant.org}|${userId}`;
    let user = view.get<UserFacts | null>(COLLECTIONS.users, key);
    let group = view.get<number | null>(COLLECTIONS.memberships, key);
    await Promise.all([
      user === undefined &&
        tenant
          .collection<UserDoc>(COLLECTIONS.users)
          .findById(String(userId), { projection: { org: 1, is_active: 1, is_staff: 1, is_site_admin: 1 } })
          .then((doc) => {
            user = doc && { isActive: doc.is_active, isStaff: doc.is_staff, isSiteAdmin: doc.is_site_admin, org: doc.org };
            view.set(COLLECTIONS.users, key, user);
          }),
      group === undefined &&
        tenant
          .collection<MembershipDoc>(COLLECTIONS.memberships)
          .findById(String(userId), { projection: { group: 1 } })
          .then((doc) => {
            group = doc?.group ?? null;
            view.set(COLLECTIONS.memberships, key, group);
          }),
    ]);
    return { user: user ?? null, group: group ?? null };
  }

  /**
   * Which of `courses` are linked to `group`. When caching, the organization's whole link table
   * is loaded once per links version (one query, shared by concurrent requests): links are few
   * next to users (courses times groups at most) and change only by admin writes, while
   * (course, group) pairs are too many to warm one by one. Without the cache, or past
   * `maxCachedLinks`, the pairs asked for are read (one query) and not kept: every link fact
   * kept is in the table, under `<org>|*`, which any change of a link of the organization drops,
   * whatever the link's `_id` (a PATCH moves a link to another pair).
   */
  async function linkedToGroup(view: FactsView, tenant: Tenant, courses: string[], group: number): Promise<Set<string>> {
    const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
    const table = view.caching ? await linkTable(view, links) : null;
    if (table) return new Set(courses.filter((course) => table.has(`${course}|${group}`)));
    const found = await links.find({ group, course: { $in: courses } }, { projection: { _id: 0, course: 1 } }).toArray();
    return new Set(found.map((l) => l.course));
  }

  /** The organization's links as `<course>|<group>` pairs; null past `maxCachedLinks`. */
  function linkTable(view: FactsView, links: TenantCollection<GroupCourseDoc>): Promise<Set<string> | null> {
    const key = `${links.org}|*`;
    const known = view.get<Promise<Set<string> | null>>(COLLECTIONS.groupCourses, key);
    if (known) return known;
    const loading = links
      .find({}, { projection: { _id: 0, course: 1, group: 1 } })
      .limit(maxCachedLinks + 1)
      .toArray()
      .then((docs) => (docs.length > maxCachedLinks ? null : new Set(docs.map((d) => `${d.course}|${d.group}`))));
    view.set(COLLECTIONS.groupCourses, key, loading);
    loading.catch(() => view.delete(COLLECTIONS.groupCourses, key)); // the next request tries again
    return loading;
  }

  /** The facts of each of `courses`, all of organization `org`, for `userId` (null: anonymous). */
  async function factsInOrg(view: FactsView, org: string, courses: string[], userId: number | null): Promise<AccessFacts[]> {
    const tenant = new Tenant(db, org);
    const publicRecords = tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);
    // The course facts come first when the cache holds them all (the usual case): a course they
    // settle (flag off, public) then costs no read of the learner. Otherwise all in parallel.
    const courseFactsCached =
      view.get(COLLECTIONS.siteConfigurations, tenant.org) !== undefined &&
      courses.every((course) => view.get(COLLECTIONS.publicCourses, `${org}|${course}`) !== undefined);
    const courseFacts = Promise.all([featureEnabled(view, tenant), existing(view, COLLECTIONS.publicCourses, publicRecords, courses)]);
    /** The learner to read: none when anonymous, or when every course is settled without one. */
    const learnerToRead = async (): Promise<number | null> => {
      if (userId === null || !courseFactsCached) return userId;
      const [enabled, publics] = await courseFacts;
      return courses.some((course) => needsUser({ featureEnabled: enabled, isPublic: publics.has(course) })) ? userId : null;
    };
    const [[enabled, publics], who] = await Promise.all([courseFacts, learnerToRead().then((id) => (id === null ? null : learner(view, tenant, id)))]);
    const facts: AccessFacts[] = courses.map((course) => {
      const f: AccessFacts = { courseOrg: org, featureEnabled: enabled, isPublic: publics.has(course), user: null, memberOfLinkedGroup: false };
      if (needsUser(f)) f.user = who?.user ?? null;
      return f;
    });
    const group = who?.group ?? null;
    const toCheck = group === null ? [] : courses.filter((_, i) => needsLink(facts[i]!));
    if (group !== null && toCheck.length > 0) {
      const linked = await linkedToGroup(view, tenant, toCheck, group);
      courses.forEach((course, i) => {
        if (linked.has(course)) facts[i]!.memberOfLinkedGroup = true;
      });
    }
    return facts;
  }

  return {
    /** The facts for each distinct course of `courseKeys`; a course unknown (or not the caller's to ask about) is absent. */
    async facts(courseKeys: readonly string[], userId: number | null, mayAsk: OrgFilter): Promise<Map<string, AccessFacts>> {
      const view = await cache.current();
      const orgs = await courseOrgs(view, [...new Set(courseKeys)]);
      const byOrg = new Map<string, string[]>();
      for (const [course, org] of orgs) {
        if (org === null || !mayAsk(org)) continue;
        const list = byOrg.get(org);
        if (list) list.push(course);
        else byOrg.set(org, [course]);
      }
      const out = new Map<string, AccessFacts>();
      await Promise.all(
        [...byOrg].map(async ([org, courses]) => {
          const facts = await factsInOrg(view, org, courses, userId);
          courses.forEach((course, i) => {
            out.set(course, facts[i]!);
          });
        }),
      );
      return out;
    },
  };
}
