import type { Filter, UpdateFilter } from 'mongodb';
import { COLLECTIONS, type CourseDoc, type GroupCourseDoc, type MembershipDoc, type PublicCourseDoc, type TenantDoc, type UserDoc } from '../db/collections';
import { readInPieces } from '../db/dialect';
import { indexCourse, indexUser } from '../db/search-index';
import type { Tenant, TenantCollection } from '../db/tenant';

/**
 * The list facts: fields of a user or course document derived from other records, so that the
 * lists' filters are index equalities on the document itself (no join through memberships or
 * links at read time):
 * - user: `grp` (the membership's group, 0 for none) and `member` (1 when in a group);
 * - course: `is_public` (a public record exists) and `linked` (a group link exists).
 *
 * There are no multi-document transactions, so every write of a source record (membership,
 * public record, link) is followed by a sync that re-reads the source and sets the fact with a
 * version guard: read the document's `facts_v`, then the sources, then update only if
 * `facts_v` is still what was read (and increment it). If another sync landed in between, this
 * one reads again. The last sync to land therefore read the sources after every sync before it
 * landed, so once the writers have finished, the facts equal their sources. A writer that dies
 * between its source write and its sync leaves the fact stale until the record's next sync:
 * any later write of the same record, the next event about the user or course (handlers and
 * `cag import` sync after their upsert), or a list page that shows it (read repair, below).
 */

/** Sync rounds before giving up: each extra round means another sync landed meanwhile. */
const ROUNDS = 20;
/** Guarded updates sent in one command. */
const WRITES_AT_ONCE = 1000;

interface Guarded {
  _id: string;
  facts_v?: number;
}

/**
 * One guarded derivation for many documents: `read` the documents' versions, `derive` each
 * one's facts from fresh reads of the sources (null: the document is gone or already right),
 * then write each under its version; the ones whose version moved go round again.
 */
async function syncGuarded<T extends TenantDoc & Guarded, D extends Guarded, F extends object>(
  collection: TenantCollection<T>,
  read: (ids: string[]) => Promise<Map<string, D>>,
  derive: (docs: D[]) => Promise<Map<string, F | null>>,
  ids: Iterable<string>,
): Promise<void> {
  let pending = [...new Set(ids)];
  for (let round = 0; round < ROUNDS && pending.length > 0; round++) {
    const docs = await read(pending); // versions first, then the sources: the order the guard needs
    const facts = await derive([...docs.values()]);
    const writes = [...facts].filter((e): e is [string, F] => e[1] !== null);
    const retry: string[] = [];
    // One command per WRITES_AT_ONCE documents; a piece where some lost the race goes round
    // again whole: the next round's derive leaves out those already right.
    for (let i = 0; i < writes.length; i += WRITES_AT_ONCE) {
      const piece = writes.slice(i, i + WRITES_AT_ONCE);
      const matched = await collection.updateEach(
        piece.map(([id, f]) => ({
          filter: { _id: id, facts_v: docs.get(id)!.facts_v ?? null } as Filter<T>,
          update: { $set: f, $inc: { facts_v: 1 } } as unknown as UpdateFilter<T>,
        })),
      );
      if (matched < piece.length) retry.push(...piece.map(([id]) => id));
    }
    pending = retry;
  }
  if (pending.length > 0) throw new Error(`list facts of ${pending.length} records kept changing`);
}

type UserFactsDoc = Pick<UserDoc, '_id' | 'grp' | 'member' | 'facts_v'>;

/** Sets `grp`/`member` of these users (of the tenant's organization) from their memberships. */
export function syncUserGroups(tenant: Tenant, userIds: Iterable<number | string>): Promise<void> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  const memberships = tenant.collection<MembershipDoc>(COLLECTIONS.memberships);
  return syncGuarded<UserDoc, UserFactsDoc, Pick<UserDoc, 'grp' | 'member'>>(
    users,
    (ids) => users.findByIds(ids, { projection: { grp: 1, member: 1, facts_v: 1 } }),
    async (docs) => {
      const byUser = await memberships.findByIds(
        docs.map((d) => d._id),
        { projection: { group: 1 } },
      );
      return new Map(docs.map((d) => [d._id, userGroupFactsAgree(d, byUser.get(d._id)) ? null : userGroupFacts(byUser.get(d._id))]));
    },
    [...userIds].map(String),
  );
}

/** A user's list facts as its membership (or none) makes them. */
export function userGroupFacts(membership: Pick<MembershipDoc, 'group'> | undefined): Pick<UserDoc, 'grp' | 'member'> {
  const grp = membership?.group ?? 0;
  return { grp, member: grp === 0 ? 0 : 1 };
}

/** Whether the user's stored list facts are what its membership (or none) makes them: no sync would write. */
export function userGroupFactsAgree(user: UserFactsDoc, membership: Pick<MembershipDoc, 'group'> | undefined): boolean {
  const facts = userGroupFacts(membership);
  return user.grp === facts.grp && user.member === facts.member && user.facts_v !== undefined;
}

type CourseFactsDoc = Pick<CourseDoc, '_id' | 'is_public' | 'linked' | 'facts_v'>;

/** Sets `is_public`/`linked` of these courses (of the tenant's organization) from their records. */
export function syncCourseFacts(tenant: Tenant, courseKeys: Iterable<string>): Promise<void> {
  const courses = tenant.collection<CourseDoc>(COLLECTIONS.courses);
  const publics = tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
  return syncGuarded<CourseDoc, CourseFactsDoc, Pick<CourseDoc, 'is_public' | 'linked'>>(
    courses,
    (keys) => courses.findByIds(keys, { projection: { is_public: 1, linked: 1, facts_v: 1 } }),
    async (docs) => {
      const keys = docs.map((d) => d._id);
      const [open, linked] = await Promise.all([publics.findByIds(keys, { projection: { _id: 1 } }), linkedCourses(links, keys)]);
      return new Map(
        docs.map((d) => {
          const isPublic = open.has(d._id) ? 1 : 0;
          const isLinked = linked.has(d._id) ? 1 : 0;
          const same = d.is_public === isPublic && d.linked === isLinked && d.facts_v !== undefined;
          return [d._id, same ? null : { is_public: isPublic, linked: isLinked }];
        }),
      );
    },
    courseKeys,
  );
}

/** Which of `keys` have at least one link (the `{org, course}` index, a piece of keys at a time). */
async function linkedCourses(links: TenantCollection<GroupCourseDoc>, keys: string[]): Promise<Set<string>> {
  const found = await readInPieces(keys, (piece) => links.find({ course: { $in: piece } }, { projection: { _id: 0, course: 1 } }).toArray());
  return new Set(found.map((l) => l.course));
}

/** Read repairs under way, so that a test (or a shutdown) can wait for them. */
const repairs = new Set<Promise<void>>();

/**
 * Read repair: a list page that read a record whose derived fields disagree with the sources it
 * also read hands the record here, and it is derived again after the answer, off the request
 * (queries never write). A repair that fails is dropped: the other paths above still cover it.
 */
function repairLater(derive: () => Promise<void>): void {
  const repair = derive()
    .catch(() => undefined)
    .finally(() => repairs.delete(repair));
  repairs.add(repair);
}

export function repairUserGroupsLater(tenant: Tenant, userIds: readonly number[]): void {
  if (userIds.length > 0) repairLater(() => syncUserGroups(tenant, userIds));
}

export function repairCourseFactsLater(tenant: Tenant, courseKeys: readonly string[]): void {
  if (courseKeys.length > 0) repairLater(() => syncCourseFacts(tenant, courseKeys));
}

/** Resolves once every read repair started so far is done. */
export async function repairsDone(): Promise<void> {
  await Promise.all([...repairs]);
}

/** The user ids of the tenant's members of `group`, through the membership index. */
export async function membersOf(tenant: Tenant, group: number): Promise<string[]> {
  const docs = await tenant
    .collection<MembershipDoc>(COLLECTIONS.memberships)
    .find({ group }, { projection: { _id: 1 } })
    .toArray();
  return docs.map((d) => d._id);
}

/** Users whose derived group is `group` (the `{org, grp, listed, id}` index): what a cascade must re-derive. */
export async function usersShowingGroup(tenant: Tenant, group: number): Promise<string[]> {
  const docs = await tenant
    .collection<UserDoc>(COLLECTIONS.users)
    .find({ grp: group }, { projection: { _id: 0, id: 1 } })
    .toArray();
  return docs.map((d) => String(d.id));
}

/**
 * Derives every list fact and search gram of an organization again (`cag reindex`): for a
 * database written before they existed, or after writers died between their writes and their
 * derivations. A page of users (then courses) at a time, in id order; idempotent, and safe while
 * the service runs (each step is the guarded derivation the writers use). Returns the counts.
 */
export async function reindexOrganization(tenant: Tenant, pageSize = 500): Promise<{ users: number; courses: number }> {
  const users = tenant.collection<UserDoc>(COLLECTIONS.users);
  let userCount = 0;
  for (let offset = 0; ; offset += pageSize) {
    const page = await users.find({}).sort({ id: 1 }).skip(offset).limit(pageSize).toArray();
    if (page.length === 0) break;
    // `listed` comes from the record itself: set where missing or wrong, if the record did not change meanwhile.
    for (const u of page) {
      const listed = u.is_site_admin ? 0 : 1;
      if (u.listed !== listed) {
        await users.updateOne({ _id: u._id, event_time: u.event_time }, { $set: { listed } });
        u.listed = listed;
      }
    }
    await syncUserGroups(
      tenant,
      page.map((u) => u.id),
    );
    for (let i = 0; i < page.length; i += 16) await Promise.all(page.slice(i, i + 16).map((u) => indexUser(tenant, u)));
    userCount += page.length;
  }
  const courses = tenant.collection<CourseDoc>(COLLECTIONS.courses);
  let courseCount = 0;
  for (let offset = 0; ; offset += pageSize) {
    const page = await courses.find({}).sort({ id: 1 }).skip(offset).limit(pageSize).toArray();
    if (page.length === 0) break;
    await syncCourseFacts(
      tenant,
      page.map((c) => c._id),
    );
    for (let i = 0; i < page.length; i += 16) await Promise.all(page.slice(i, i + 16).map((c) => indexCourse(tenant, c)));
    courseCount += page.length;
  }
  return { users: userCount, courses: courseCount };
}
