import type { Db } from 'mongodb';
import {
  COLLECTIONS,
  type CourseDoc,
  type CourseGramDoc,
  type GroupCourseDoc,
  type GroupDoc,
  type MembershipDoc,
  type PublicCourseDoc,
  type SiteConfigurationDoc,
  type UserDoc,
  type UserGramDoc,
} from '../src/db/collections';
import { courseSearchFields, gramsOf, userSearchFields } from '../src/db/search-index';
import { markStoredDataCurrent } from '../src/db/upgrades';

/** The data set of `npm run bench`. Everything lives in organization `MAIN_ORG` but a second one. */
export interface BenchScale {
  users: number;
  courses: number;
  groups: number;
  /** Users of the second organization; a hundredth of `users` when absent. */
  otherUsers?: number;
  /**
   * Whether the second organization's users get their search grams (30 or so documents each).
   * False only to seed a very large second organization in reasonable time: no row lists or
   * searches it, so its grams would only make the gram index larger.
   */
  otherGrams?: boolean;
}

/** Users of the second organization: `otherUsers`, or a hundredth of `users`. */
export const otherUsersOf = (scale: Pick<BenchScale, 'users' | 'otherUsers'>) => scale.otherUsers ?? Math.max(1, Math.round(scale.users / 100));

export const MAIN_ORG = 'bench-main';
export const OTHER_ORG = 'bench-other';
const EPOCH = '2020-01-01T00:00:00Z';
export const WORDS = ['amber', 'birch', 'cedar', 'delta', 'ember', 'fjord', 'gamma', 'heron', 'indigo', 'juniper', 'kestrel', 'lumen'];

/**
 * A user as a version before the learners' histories stored it (no `h`; its earlier bookkeeping
 * `act_v`, `act_done`): what bench/upgrade.ts and bench/upgrade-writes.ts upgrade.
 */
export function oldShapeUser(id: number, p: { username: string; name: string; email: string; active: boolean }) {
  const epoch = '2020-01-01T00:00:00Z';
  return {
    _id: String(id),
    id,
    org: MAIN_ORG,
    username: p.username,
    name: p.name,
    email: p.email,
    email_lower: p.email,
    is_active: p.active,
    is_staff: false,
    is_site_admin: false,
    event_time: epoch,
    listed: 1,
    grp: 0,
    member: 0,
    facts_v: 0,
    act_v: `${epoch}#0000`,
    act_done: p.active,
  };
}

/** A deterministic pseudo-random sequence (mulberry32), so every run seeds the same data set. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Seeded {
  /** User ids of the main organization: 1..users. */
  userIds: number[];
  /** The emails of the main organization's listed users. */
  emails: string[];
  /** Course keys of the main organization. */
  courseKeys: string[];
  /** Group ids of the main organization: 1..groups. */
  groupIds: number[];
}

async function insertAll<T extends { _id: string }>(db: Db, name: string, docs: T[]): Promise<void> {
  for (let i = 0; i < docs.length; i += 10_000) {
    await db.collection<T>(name).insertMany(docs.slice(i, i + 10_000) as never, { ordered: false });
  }
}

/**
 * Seeds a fresh database with insertMany of the service's own document shapes: the main
 * organization has `users` users, each in one of `groups` groups, and 90% of `courses` courses,
 * each linked to 1-3 groups, 10% of them public; the other organization has the remaining
 * courses and a hundredth of the users (without groups). Both have the flag on.
 */
export async function seedBenchData(db: Db, scale: BenchScale): Promise<Seeded> {
  const next = random(42);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const mainCourses = Math.max(1, Math.round(scale.courses * 0.9));
  const otherUsers = otherUsersOf(scale);
  const otherGrams = scale.otherGrams ?? true;

  const groups: GroupDoc[] = [];
  for (let id = 1; id <= scale.groups; id++) groups.push({ _id: String(id), id, org: MAIN_ORG, name: `Group ${id}`, description: '' });

  const users: UserDoc[] = [];
  const memberships: MembershipDoc[] = [];
  const userGrams: UserGramDoc[] = [];
  for (let id = 1; id <= scale.users + otherUsers; id++) {
    const org = id <= scale.users ? MAIN_ORG : OTHER_ORG;
    const first = pick(WORDS);
    const last = pick(WORDS);
    const email = `${first}.${last}${id}@${pick(WORDS)}.example.com`;
    // The list facts and search grams the service derives (src/domain/list-facts.ts, search-index.ts).
    const grp = org === MAIN_ORG ? 1 + Math.floor(next() * scale.groups) : 0;
    const listed = id === 1 ? 0 : 1;
    const user: UserDoc = {
      _id: String(id),
      id,
      org,
      username: `${first}${id}`,
      name: `${first} ${last}`,
      email,
      email_lower: email,
      is_active: next() > 0.02,
      is_staff: false,
      is_site_admin: id === 1,
      event_time: EPOCH,
      listed,
      grp,
      member: grp === 0 ? 0 : 1,
      facts_v: grp === 0 ? 0 : 1,
    };
    users.push(user);
    if (grp !== 0) memberships.push({ _id: String(id), id, org, user: id, group: grp, automatic: false });
    if (listed === 1 && (org === MAIN_ORG || otherGrams))
      for (const g of gramsOf(userSearchFields(user))) userGrams.push({ _id: `${id}|${g}`, org, g, r: id, t: EPOCH });
  }

  const courses: CourseDoc[] = [];
  const links: GroupCourseDoc[] = [];
  const publics: PublicCourseDoc[] = [];
  const courseGrams: CourseGramDoc[] = [];
  for (let n = 1; n <= scale.courses; n++) {
    const org = n <= mainCourses ? MAIN_ORG : OTHER_ORG;
    const key = `course-v1:${org === MAIN_ORG ? 'MAIN' : 'OTHER'}+C${n}+2026`;
    const main = org === MAIN_ORG;
    const isPublic = main && n % 10 === 0 ? 1 : 0;
    const course: CourseDoc = {
      _id: key,
      id: key,
      org,
      name: `${pick(WORDS)} ${pick(WORDS)} ${n}`,
      event_time: EPOCH,
      is_public: isPublic,
      linked: main ? 1 : 0,
      facts_v: main ? 1 : 0,
    };
    courses.push(course);
    for (const g of gramsOf(courseSearchFields(course))) courseGrams.push({ _id: `${key}|${g}`, org, g, r: key, t: EPOCH });
    if (!main) continue;
    const linked = new Set<number>();
    const count = 1 + Math.floor(next() * 3);
    while (linked.size < Math.min(count, scale.groups)) linked.add(1 + Math.floor(next() * scale.groups));
    for (const group of linked) links.push({ _id: `${key}|${group}`, id: links.length + 1, org, course: key, group });
    if (isPublic) publics.push({ _id: key, id: publics.length + 1, org, course: key });
  }

  // Each resource's counter at the highest id the seed used, as src/db/counters.ts keeps it:
  // without it the service's next POST would be handed an id the seed already used.
  const counters = (
    [
      ['groups', groups.length],
      ['memberships', memberships.length],
      ['group_courses', links.length],
      ['public_courses', publics.length],
    ] as const
  )
    .filter(([, n]) => n > 0)
    .map(([resource, n]) => ({ _id: resource, n }));

  const configs: SiteConfigurationDoc[] = [MAIN_ORG, OTHER_ORG].map((org) => ({ _id: org, org, ENABLE_COURSE_ACCESS_GROUPS: true }));

  await Promise.all([
    insertAll(db, COLLECTIONS.groups, groups),
    insertAll(db, COLLECTIONS.users, users),
    insertAll(db, COLLECTIONS.memberships, memberships),
    insertAll(db, COLLECTIONS.courses, courses),
    insertAll(db, COLLECTIONS.groupCourses, links),
    insertAll(db, COLLECTIONS.publicCourses, publics),
    insertAll(db, COLLECTIONS.siteConfigurations, configs),
    insertAll(db, COLLECTIONS.counters, counters),
    insertAll(db, COLLECTIONS.userGrams, userGrams),
    insertAll(db, COLLECTIONS.courseGrams, courseGrams),
  ]);
  // Every record is in this version's shape, as a deployment's would be after its upgrades: so
  // marked, a server started on the seeds upgrades nothing (unmarked, it reads every user first).
  await markStoredDataCurrent(db);
  return {
    userIds: Array.from({ length: scale.users }, (_, i) => i + 1),
    emails: users.filter((u) => u.org === MAIN_ORG && u.listed === 1).map((u) => u.email),
    courseKeys: courses.filter((c) => c.org === MAIN_ORG).map((c) => c._id),
    groupIds: groups.map((g) => g.id),
  };
}
