import type { Collection, Db, Document, IndexDescription, WriteConcernSettings } from 'mongodb';
import type { Actor, Cause } from './change-context';

/**
 * Every collection, with the document shapes the whole service stores.
 *
 * `_id` is a string key: a natural one where a record is what it names (a user id, a course key,
 * an organization), so the LMS hot path (user, membership, course, public record, site
 * configuration) is primary-key lookups and a repeated event or a race of two writers meets the
 * same key; a link's or rule's id, as what it joins changes (src/domain/by-id.ts). Public
 * integer ids live in `id`, unique per organization.
 */
export const COLLECTIONS = {
  groups: 'groups',
  memberships: 'memberships',
  rules: 'membership_rules',
  groupCourses: 'group_courses',
  publicCourses: 'public_courses',
  users: 'users',
  courses: 'courses',
  siteConfigurations: 'site_configurations',
  counters: 'counters',
  changeLog: 'change_log',
  tombstones: 'tombstones',
  outbox: 'outbox',
  auditLog: 'audit_log',
  leases: 'leases',
  userGrams: 'user_grams',
  courseGrams: 'course_grams',
  upgrades: 'upgrades',
  projectionIntents: 'projection_intents',
  writeIntents: 'write_intents',
} as const;

/**
 * The write concern of the writes that coordinate processes (leases) or must never be lost (the
 * outbox's intents): acknowledged by a majority of a replica set, so a failover cannot roll back
 * a lease another process already saw as taken, or an intent whose write then happened.
 */
export const MAJORITY: Readonly<{ writeConcern: WriteConcernSettings }> = { writeConcern: { w: 'majority' } };

export type CollectionName = (typeof COLLECTIONS)[keyof typeof COLLECTIONS];

/** Fields every tenant-owned document has. */
export interface TenantDoc {
  _id: string;
  org: string;
}

export interface GroupDoc extends TenantDoc {
  id: number;
  name: string;
  description: string;
}

/**
 * `_id` is `String(user)`: a user has at most one membership, enforced by the primary key. A
 * projection of the learner's record (its `m`: src/domain/learners.ts): written only from there.
 */
export interface MembershipDoc extends TenantDoc {
  id: number;
  user: number;
  group: number;
  /** True when a membership rule created it. */
  automatic: boolean;
  /**
   * Where it began in the learner's history (placeKey; absent or '': before the history was
   * kept): another membership of the same learner since is another `born`, and an
   * administrator's change that named this one by id does not touch it.
   */
  born?: string;
  /**
   * The learner record's revision whose projection wrote it (absent: written before this was
   * kept): a projection of an older revision leaves it alone (src/domain/learners.ts).
   */
  rev?: number;
}

/** `_id` is `String(id)` (`org|domain` when 0.1.0 made it: src/domain/by-id.ts); a domain has at most one rule per organization. */
export interface RuleDoc extends TenantDoc {
  id: number;
  name: string;
  domain: string;
  group: number;
}

/** `_id` is `String(id)` (`course|group` when 0.1.0 made it: src/domain/by-id.ts); a (course, group) pair has at most one link. */
export interface GroupCourseDoc extends TenantDoc {
  id: number;
  course: string;
  group: number;
  /** Where the link began in the course's history (placeKey; absent or '': before the history was kept): a deletion or move in its past takes it. */
  born?: string;
}

/** `_id` is the course key: a course has at most one public record. */
export interface PublicCourseDoc extends TenantDoc {
  id: number;
  course: string;
  /** As on a link. */
  born?: string;
}

/**
 * A learner: its history and the fold's result (src/domain/learners.ts, docs/event-core.md).
 * `_id` is `String(id)`, whatever the organization: a move changes `org`, and a retired learner
 * keeps its record in none (`org: null` on LearnerRecordDoc, its profile blanked), which no
 * tenant reads.
 */
export interface UserDoc extends TenantDoc {
  id: number;
  username: string;
  name: string;
  email: string;
  /** Lowercased email, for `email_exact` and rule matching. */
  email_lower: string;
  is_active: boolean;
  is_staff: boolean;
  is_site_admin: boolean;
  /** The learner's history (src/domain/record-history.ts) and its revision: every write is a compare-and-set on `rev`. */
  h?: StoredHistory;
  rev?: number;
  /** Where the learner's current incarnation began (placeKey). */
  since?: string;
  /** Organizations the learner left whose membership and search grams are still to be deleted there. */
  left?: { org: string; upTo: string }[];
  /** Identities (hashed, as before the history) of the newest events of a record upgraded from the earlier shape. */
  legacy_ids?: string[];
  /** The fold's membership (null or absent: none): its group, whether a rule made it, where it began (placeKey). The memberships collection is its projection. */
  m?: { group: number; auto: boolean; born: string } | null;
  /** The revision whose projection (membership, list facts, search grams, change log) is complete. */
  projected?: number;
  /**
   * Projections under way (docs/event-core.md, "Writes"): each marks the organization it is about
   * to write in (`<ISO time>|<token>|<org>`, also its intent's) before it writes there and unmarks
   * it when done, so a projection that died after writing leaves a durable trace: the next
   * projection cleans where the marks point, and the sweep finishes an intent older than the lease.
   */
  writing?: string[];
  /**
   * The batch that inserted the record (its token), while it may be under way: the record counts
   * as projected only once the batch's intent (`ProjectionIntentDoc`) is gone.
   */
  batch?: string;
  /** The newest instant the learner's history holds, never lowered: the search grams' `t`. */
  event_time: string;
  /** 1 when `users/` lists the user (not a site administrator), else 0: an equality, for indexes. */
  listed: 0 | 1;
  /**
   * Derived from the membership (src/domain/list-facts.ts): its group, or 0 for none, and
   * `member` (1 when in a group), so `group`/`no_group` are index equalities on the user.
   * `facts_v` counts the derivations, the guard that makes the last one win.
   */
  grp: number;
  member: 0 | 1;
  facts_v: number;
}

/** A learner record as the event core reads it, whatever organization holds it: none when retired. */
export type LearnerRecordDoc = Omit<UserDoc, 'org'> & { org: string | null };

/** Read model filled from LMS events. `_id` and `id` are the course key. */
export interface CourseDoc extends TenantDoc {
  id: string;
  name: string;
  /**
   * The course's history (src/domain/record-history.ts) and its revision: every write of it is a
   * compare-and-set on `rev` (src/db/course-records.ts). A deleted course keeps its record, in no
   * organization (`org: null` on CourseRecordDoc): no tenant reads it. Absent on a record stored
   * before histories were kept, or seeded: read as course-records.ts `legacyCourseHistory`.
   */
  h?: StoredHistory;
  rev?: number;
  /** Where the course's current incarnation began (placeKey; absent: ''): a link or public record born before it is gone. */
  since?: string;
  /**
   * Organizations the course left whose links and public record are still to be deleted: those
   * made up to `upTo` (placeKey), the course's place when it left, compared by arrival count (one
   * made there after it came back came after more arrivals).
   */
  left?: { org: string; upTo: string }[];
  /** Identities (hashed, as before the history) of the newest events of a record upgraded from the earlier shape. */
  legacy_ids?: string[];
  /** The newest instant the course has reflected, never lowered: the search grams' `t`. */
  event_time: string;
  /**
   * Derived from the public record and the group links (src/domain/list-facts.ts), so
   * `is_public`/`no_group` are index equalities on the course; `facts_v` as on users.
   */
  is_public: 0 | 1;
  linked: 0 | 1;
  facts_v: number;
}

/**
 * A record's history as stored: what src/domain/record-history.ts folds (the domain owns its
 * entries' shape; storage keeps them as they are).
 */
export interface StoredHistory {
  seq: number;
  entries: Document[];
  floor: { place: { at: string; seq: number }; state: Document; ids: string[] } | null;
}

/** A course record as the event core reads it, whatever organization holds it: none when deleted. */
export type CourseRecordDoc = Omit<CourseDoc, 'org'> & { org: string | null };

/**
 * One search n-gram of one record (src/domain/search-index.ts): `g` is a lowercased trigram
 * (or the whole field when shorter) of a searchable field; `r` the record's sort key (a user id,
 * a course key); `t` the record's `event_time` it was computed from, so an older computation
 * never deletes a newer one's grams. `_id` is `<r>|<g>`.
 */
export interface GramDoc<R extends number | string> extends TenantDoc {
  g: string;
  r: R;
  t: string;
}
export type UserGramDoc = GramDoc<number>;
export type CourseGramDoc = GramDoc<string>;

/**
 * What an earlier version kept of a deletion (`_id` `user:<id>` or `course:<key>`): read only by
 * the upgrades that turn them into records in no organization (src/db/upgrades.ts).
 */
export interface TombstoneDoc {
  _id: string;
  event_time: string;
  event_ids?: string[];
  org: string | null;
}

/** `_id` is the organization. */
export interface SiteConfigurationDoc extends TenantDoc {
  ENABLE_COURSE_ACCESS_GROUPS: boolean;
}

/** `_id` is a resource: `n` is the last integer id handed out (src/db/counters.ts). */
export interface CounterDoc {
  _id: string;
  n: number;
}

/** One change of the change sequence: the record's `_id` (null: any record), its organization, and the outbox intent the write carried out, if any. */
export interface ChangeLogEntry {
  k: string | null;
  o: string;
  i?: string;
}

/** `_id` is a collection: its change sequence and newest changes, each a JSON-encoded entry (src/db/change-log.ts). */
export interface ChangeLogDoc {
  _id: string;
  seq: number;
  log: (string | ChangeLogEntry)[];
}

/**
 * An outbox intent (src/db/outbox.ts): written before a write of a tracked collection, naming the
 * records it may change and why; the change relay resolves it once the change log says the write
 * is done (or after a grace period, when its process died), then deletes it.
 */
export interface OutboxDoc {
  /** Sortable: the time of the intent, then a per-process counter, then the process. */
  _id: string;
  /** The collection written. */
  c: CollectionName;
  /** The organization of the write. */
  o: string;
  /** The `_id`s of the records the write may change. */
  k: string[];
  t: Date;
  cause: Cause;
  actor: Actor;
  rid: string | null;
  /** An audit record is asked for (the write was audited). */
  audit: boolean;
  /** A change event is asked for: its process had change events on (absent: a process that does not know, `cag`, or an older version). */
  e?: boolean;
  /** When audited: each record of `k` as it was before the write (null: none), in `k`'s order. */
  b?: (Document | null)[];
}

/** One audited change of one record (`_id`: the intent's id and the record's index in it). */
export interface AuditDoc extends TenantDoc {
  time: Date;
  actor: Actor;
  /** The actor as the audit log filters it: the user id, or `cag:<operator>`. */
  actor_id: string;
  cause: Cause;
  request_id: string | null;
  action: 'create' | 'update' | 'delete';
  /** The API's name of the resource (`memberships`, `course-access-groups`, ...). */
  resource: string;
  /** Its public id (the integer id; the organization for the site configuration). */
  resource_id: string;
  before: Document | null;
  after: Document | null;
}

/** A lease (`_id`: what it is for): one holder at a time until `expires`; `seq` numbers what holders publish. */
export interface LeaseDoc {
  _id: string;
  owner: string;
  expires: Date;
  seq: number;
}

/**
 * A projection under way (docs/event-core.md, "Writes"): written before it first writes in an
 * organization, deleted when it is done. A learner's projection writes one (`_id`: its mark) and
 * also marks the record (`writing`); a batch writes one for all its new learners (`_id`: its
 * token, the records' `batch`). The sweep finishes the ones older than the lease: the collection
 * is small (only what is under way), so finding them reads none of the records.
 */
export interface ProjectionIntentDoc {
  _id: string;
  /** Where and since when it writes: `<ISO time>|<token>|<org>`. */
  mark: string;
  /** The user ids (as `_id`s) of the records it projects. */
  ids: string[];
}

/**
 * A write under way that a dead process must not leave half done (src/domain/children.ts): a
 * child (a link, a public record, a rule) written under its parents, deleted once the child's
 * parents were read again; or a group's deletion, deleted once its second sweep is done. The
 * sweep finishes the ones older than the lease.
 */
export interface WriteIntentDoc {
  _id: string;
  /** When it was written (ISO). */
  at: string;
  org: string;
  kind: 'link' | 'public' | 'rule' | 'group-deletion';
  /** The child's `_id`, or the group's. */
  target: string;
  /** The courses whose list facts a child's write may change. */
  courses: string[];
}

/**
 * Indexes for every query the service makes (each line says which).
 *
 * `{org, id}` is unique where every record was always one document. A link or rule may be two
 * documents of one id that 0.1.0 left (src/domain/by-id.ts): there the index is not unique, and
 * ids stay unique because each is claimed once (src/db/counters.ts). What a link or rule joins is
 * unique instead, and a write that would repeat it is refused by the index (E11000).
 */
const INDEXES: Record<string, IndexDescription[]> = {
  [COLLECTIONS.groups]: [
    { key: { org: 1, id: 1 }, unique: true }, // list by id
  ],
  [COLLECTIONS.memberships]: [
    { key: { org: 1, id: 1 }, unique: true }, // list by id, retrieve by id
    { key: { org: 1, group: 1 } }, // users?group=, group cascade
  ],
  [COLLECTIONS.rules]: [
    { key: { org: 1, id: 1 } }, // list by id, retrieve by id
    { key: { org: 1, group: 1 } }, // group cascade
    { key: { org: 1, domain: 1 }, unique: true, name: 'org_1_domain_1_unique' }, // a domain has one rule; rule matching by the learners' domains
  ],
  [COLLECTIONS.groupCourses]: [
    { key: { org: 1, id: 1 } }, // list by id, retrieve by id
    { key: { org: 1, course: 1 } }, // a course's group_links, courses?no_group=
    { key: { org: 1, group: 1, course: 1 }, unique: true, name: 'org_1_group_1_course_1_unique' }, // a pair has one link; courses?group= (its courses in list order, covered), group cascade
  ],
  [COLLECTIONS.publicCourses]: [
    { key: { org: 1, id: 1 }, unique: true }, // list by id, retrieve by id, courses?is_public=
  ],
  [COLLECTIONS.users]: [
    { key: { org: 1, id: 1 }, unique: true }, // id uniqueness, rule application by id
    { key: { org: 1, email_lower: 1 } }, // users?email_exact=
    { key: { org: 1, listed: 1, id: 1 } }, // users/ (and its deep pages, covered), searches driven by it
    { key: { org: 1, grp: 1, listed: 1, id: 1 } }, // users?group=, users?no_group=true (grp 0), group cascade
    { key: { org: 1, member: 1, listed: 1, id: 1 } }, // users?no_group=false
  ],
  [COLLECTIONS.courses]: [
    { key: { org: 1, id: 1 }, unique: true }, // list by id
    { key: { org: 1, is_public: 1, linked: 1, id: 1 } }, // courses?is_public=, ?no_group= and both
  ],
  // No gram index starts with `org`: FerretDB's pushdown (scripts/ferretdb/0001) ORs each
  // equality with "or an array containing it", and SQLite, without statistics, serves the
  // alternative {r: array, org: ?} from an index led by org, reading the organization's grams.
  [COLLECTIONS.userGrams]: [
    { key: { g: 1, org: 1, r: 1 } }, // search: a gram's users in id order, and its count
    { key: { r: 1, org: 1 } }, // a user's grams, when its record changes
  ],
  [COLLECTIONS.courseGrams]: [{ key: { g: 1, org: 1, r: 1 } }, { key: { r: 1, org: 1 } }],
  [COLLECTIONS.projectionIntents]: [
    { key: { mark: 1 } }, // the sweep of projections a dead process left under way (learners.ts)
  ],
  [COLLECTIONS.writeIntents]: [
    { key: { at: 1 } }, // the sweep of writes a dead process left half done (children.ts)
  ],
  [COLLECTIONS.auditLog]: [
    { key: { org: 1, time: -1 } }, // audit-log/, newest first (its TTL index: src/db/audit.ts)
  ],
};

/**
 * One index per call: FerretDB v1.24 panics (and drops the connection) on a createIndexes of
 * several indexes that already exist, so a second process starting on an existing database
 * never became ready. One at a time is idempotent there as on MongoDB.
 */
export async function ensureIndexes(db: Db): Promise<void> {
  for (const [name, indexes] of Object.entries(INDEXES)) {
    for (const index of indexes) await createIndex(db.collection(name), index);
  }
}

/**
 * An index defined again on the same keys (made unique, under its own name: a link's pair and a
 * rule's domain, once they are stored by id) replaces the old one of another name (or, unnamed,
 * of other uniqueness), which is dropped first:
 * MongoDB refuses a second definition of the same keys (IndexOptionsConflict), and FerretDB v1.24
 * answers ok and keeps the old one. Two processes starting at once both drop the old one by its
 * name (the second finds none: IndexNotFound, 27) and both create the new one (the second finds it).
 */
async function createIndex(collection: Collection, index: IndexDescription): Promise<void> {
  const existing = await collection.indexes().catch((err: { code?: number }) => {
    if (err.code === 26) return []; // NamespaceNotFound: no collection yet
    throw err;
  });
  const sameKeys = existing.find((i) => JSON.stringify(i.key) === JSON.stringify(index.key));
  const replaced = index.name === undefined ? Boolean(sameKeys?.unique) !== Boolean(index.unique) : sameKeys?.name !== index.name;
  if (sameKeys?.name && replaced) {
    await collection.dropIndex(sameKeys.name).catch((err: { code?: number }) => {
      if (err.code !== 27) throw err;
    });
  }
  await collection.createIndexes([index]);
}
