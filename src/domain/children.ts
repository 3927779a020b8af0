import type { Db } from 'mongodb';
import { COLLECTIONS, type CollectionName, type TenantDoc, type WriteIntentDoc } from '../db/collections';
import { Tenant } from '../db/tenant';
import { writeIntents } from '../db/write-intents';
import { doesNotExist, type FieldErrors, Invalid } from '../errors';
import { courseHolds } from './courses';
import { finishGroupDeletion, groupExists } from './groups';
import { syncCourseFacts } from './list-facts';

/**
 * The child's half of the parent/child protocol (docs/event-core.md, "What hangs off a record"),
 * one way for every child an administrator writes: a group link (under its course and its group),
 * a public record (under its course), a rule (under its group). An intent is written first; the
 * child is written; its parents are read again (`settle`): a deletion or move of a parent that
 * swept before the child was written is seen, and the child removes itself; then the intent goes.
 * A process that dies after the child's write leaves the intent, and the sweep settles the child
 * (`finishAbandonedWrites`): no crash leaves an orphan.
 */

export type ChildKind = Exclude<WriteIntentDoc['kind'], 'group-deletion'>;

/** A child's parents: its course (with where the child began under it) and its group. */
interface Parents {
  course?: { key: string; born: string };
  group?: number;
}

/**
 * A child: its kind, its `_id`, the courses whose list facts its write may change, and the
 * parents it is written under (what a request is refused on when the child is gone already).
 */
export interface ChildRef {
  kind: ChildKind;
  id: string;
  courses: string[];
  parents: Parents;
}

/** The fields by which a child hangs off its parents (a link has both; a public record a course; a rule a group). */
type ChildDoc = TenantDoc & { course?: string; born?: string; group?: number };

const COLLECTION_OF: Record<ChildKind, CollectionName> = { link: COLLECTIONS.groupCourses, public: COLLECTIONS.publicCourses, rule: COLLECTIONS.rules };
const children = (tenant: Tenant, kind: ChildKind) => tenant.collection<ChildDoc>(COLLECTION_OF[kind]);

/** The parents of child `ref` as stored now (null: there is none). */
async function storedParents(tenant: Tenant, ref: Pick<ChildRef, 'kind' | 'id'>): Promise<Parents | null> {
  const doc = await children(tenant, ref.kind).findById(ref.id);
  if (!doc) return null;
  return {
    ...(doc.course === undefined ? {} : { course: { key: doc.course, born: doc.born ?? '' } }),
    ...(doc.group === undefined ? {} : { group: doc.group }),
  };
}

/**
 * Reads child `ref` again with its parents (those it was written under when it is gone already).
 * Where a parent is gone (a group deleted; a course deleted, moved, or begun again since the
 * child's `born`), deletes the child as read, by that parent (another write of it since is left
 * alone), and derives its courses' list facts again. Answers which parent was gone (the course
 * first), as the request's refusal; null when both hold.
 */
async function settle(tenant: Tenant, ref: ChildRef): Promise<FieldErrors | null> {
  const stored = await storedParents(tenant, ref);
  const { course, group } = stored ?? ref.parents;
  const [courseOk, groupOk] = await Promise.all([
    course === undefined || courseHolds(tenant, course.key, course.born),
    group === undefined || groupExists(tenant, group),
  ]);
  if (stored) {
    // By `born` too: another write under the same course since (its `born` later) made the child its own.
    const bornAs = (born: string) => (born === '' ? { $in: ['', null] } : born);
    if (!courseOk) await children(tenant, ref.kind).deleteMany({ _id: ref.id, course: course!.key, born: bornAs(course!.born) } as never);
    if (!groupOk) await children(tenant, ref.kind).deleteMany({ _id: ref.id, group });
  }
  if (ref.kind !== 'rule') await syncCourseFacts(tenant, [...new Set([...ref.courses, ...(course ? [course.key] : [])])]);
  if (!courseOk) return { course: [doesNotExist(course!.key)] };
  return groupOk ? null : { group: [doesNotExist(group)] };
}

/**
 * Writes child `ref` (`write`) under its parents: the intent, the write, `settle`, the intent's
 * end. Answers the write's result and which parent was gone (the child then removed itself). A
 * write refused for its input (Invalid: nothing written) ends its intent at once; any other
 * failure leaves it to the sweep, as a death would.
 */
export async function hangOff<R>(tenant: Tenant, ref: ChildRef, write: () => Promise<R>): Promise<{ result: R; missing: FieldErrors | null }> {
  const intents = writeIntents(tenant.db);
  const intent = await intents.open({ org: tenant.org, kind: ref.kind, target: ref.id, courses: ref.courses });
  let result: R;
  try {
    result = await write();
  } catch (err) {
    if (err instanceof Invalid) await intents.close(intent);
    throw err;
  }
  const missing = await settle(tenant, ref);
  await intents.close(intent);
  return { result, missing };
}

/** `hangOff` for a creation: the child, or Invalid naming the parent that was gone. */
export async function createChild<R>(tenant: Tenant, ref: ChildRef, write: () => Promise<R>): Promise<R> {
  const { result, missing } = await hangOff(tenant, ref, write);
  if (missing) throw new Invalid(missing);
  return result;
}

/** How old an intent is before the sweep takes it for abandoned (a child's write, or a group's deletion, takes milliseconds). */
export const WRITE_LEASE_MS = 120_000;

/**
 * Finishes the writes dead processes left half done (intents older than `leaseMs`): a child is
 * settled; a group's deletion is finished (`finishGroupDeletion`: children written while it ran,
 * after its first sweep, checked the group before it went, and only its second sweep takes
 * them). Returns how many; any process may run it; one that fails is left for the next pass, and
 * the first failure thrown after the others.
 */
export async function finishAbandonedWrites(db: Db, leaseMs = WRITE_LEASE_MS, now = Date.now()): Promise<number> {
  const intents = writeIntents(db);
  // At most 100 a call: the next call (a minute later) takes the rest.
  const abandoned = await intents.abandoned(new Date(now - leaseMs).toISOString(), 100);
  let failed: unknown = null;
  for (const intent of abandoned) {
    const tenant = new Tenant(db, intent.org);
    try {
      if (intent.kind === 'group-deletion') await finishGroupDeletion(tenant, Number(intent.target));
      else await settle(tenant, { kind: intent.kind, id: intent.target, courses: intent.courses, parents: {} });
      await intents.close(intent._id);
    } catch (err) {
      // Left for the next pass; the others go on.
      failed ??= err;
    }
  }
  if (failed) throw failed;
  return abandoned.length;
}
