/**
 * A reference model of the event path: docs/events.md "How each event is applied: identity,
 * order, activations, deletions", SPEC §3's cascades and SPEC §4's access decision, as far as the
 * event-history property test (test/integration/events-model.test.ts) reaches. Pure, no I/O.
 *
 * Written independently of src/ and as plainly as possible: where the service keeps bounded
 * fields (`event_time`, `event_n`, the `event_ids` of the newest time, tombstones), the model keeps every
 * identity it has seen per record and the full list of its distinct events, so a disagreement
 * points at the service's bookkeeping, not at a shared shortcut.
 *
 * Membership rules follow the activation log: each learner record keeps its activations
 * (with the group their email's rule named when they arrived) and deactivations sorted in event
 * time, and the newest "removal" (a retirement or a move, in the past); after every user event
 * the membership is reconciled with the first activation of each activation period, replayed
 * from that log (`reconcile`), with the group named by the first of the period's activations
 * with the same email domain to arrive. Nothing of it depends on the order the events arrived in but
 * among events of one time, or where rules changed between them. It knows nothing of staff or site administrators: the generator never sends
 * those flags.
 */

export type UserEventKind = 'activated' | 'registered' | 'login' | 'updated';

interface EventBase {
  source: string;
  id: string;
  /** Event time as a number (the test uses seconds); equal numbers are equal instants. */
  time: number;
}

export interface UserEvent extends EventBase {
  kind: UserEventKind;
  organization?: string;
  user: { id: number; is_active: boolean; username: string; email: string; name: string };
}
export interface RetiredEvent extends EventBase {
  kind: 'retired';
  organization?: string;
  userId: number;
}
export interface CatalogEvent extends EventBase {
  kind: 'catalog';
  organization?: string;
  key: string;
  name: string;
}
export interface CourseDeletedEvent extends EventBase {
  kind: 'courseDeleted';
  key: string;
}
export type ModelEvent = UserEvent | RetiredEvent | CatalogEvent | CourseDeletedEvent;

export type Outcome = 'applied' | 'duplicate' | 'stale' | 'dead_lettered';

/**
 * An event's version: its time, then its position among the events of that time: applied ones
 * from 1; a stale one STALE_N on the record (a learner's late entries and removals: LATE_BASE on).
 */
export interface Version {
  t: number;
  n: number;
}
/** a is newer than b; anything is newer than nothing. */
const STALE_N = 0;
/**
 * A course deletion in the record's past (stale) comes after every event of its time the record
 * applied: the tie rule places a late event after those of its time that arrived before it.
 */
const LATE_N = Number.POSITIVE_INFINITY;
const late = (v: Version): Version => ({ t: v.t, n: LATE_N });
/**
 * A learner's late event (an activation, a deactivation, a retirement in the record's past) comes
 * after every event of its time the record saw before it, and before those that arrive after it:
 * LATE_BASE plus the record's count of late events.
 */
const LATE_BASE = 1e9;
export const newer = (a: Version, b: Version | null): boolean => b === null || a.t > b.t || (a.t === b.t && a.n > b.n);
const sameVersion = (a: Version, b: Version | undefined): boolean => b !== undefined && a.t === b.t && a.n === b.n;

/** What one record (a user id or a course key) has seen: every distinct event, in arrival order. */
interface Track {
  events: { ident: string; outcome: Outcome; version: Version }[];
  /** The newest version applied (a deletion's too): the record, or its tombstone. */
  version: Version | null;
}

export interface UserRecord {
  id: number;
  org: string;
  username: string;
  name: string;
  email: string;
  is_active: boolean;
}
/**
 * One line of a learner's activation log, at its event's version: an activation (`a`, with the
 * group its email's rule named when it arrived, or null), a deactivation (`d`), an event that
 * shows the learner active but cannot activate (`u`), or a rule applied to existing learners
 * (`j`, its group: it joins a learner active then with no membership).
 */
interface LogEntry {
  v: Version;
  k: 'a' | 'd' | 'u' | 'j';
  g: number | null;
  /** An activation's (or a rule application's) arrival on the record (1, 2, ...), and an activation's email's domain. */
  n?: number;
  dom?: string;
}
interface UserTrack extends Track {
  record: UserRecord | null;
  /** The activations and deactivations of the record in its organization, in event time (among equal versions, in arrival order). */
  log: LogEntry[];
  /** The newest removal (a retirement or a move in the record's past, the record it replaced): what began before it is gone. */
  removed: Version | null;
  /** Where in event time an administrator last changed the membership: the record's version then. No activation older than it makes one. */
  adminAt: Version | null;
  /** How many late events the record placed (their order among themselves: LATE_BASE). */
  lates: number;
  /** How many activations (and rules applied to it) the record has seen arrive. */
  arrived: number;
  /**
   * The arrivals counted when a group the learner was in was last deleted: the activations and
   * rules that arrived until then found the learner in that group, so none of them makes a
   * membership after it (its deletion is no new activation). Only while that membership is of the
   * learner's current incarnation: a removal newer than where it began, arriving later, ends the
   * incarnation it was of, and what follows the removal never found the learner in it (`since`).
   */
  barrier: number;
  /** Where the membership the barrier is for began. */
  barrierSince: Version | null;
  /** The version an administrator's write or a rule's application was last placed after, and how many were. */
  placedAfter: Version | null;
  placed: number;
}

export interface CourseRecord {
  key: string;
  org: string;
  name: string;
}
interface CourseTrack extends Track {
  record: CourseRecord | null;
}

interface OrgState {
  flag: boolean;
  /** Group handle -> name, in creation order (the order of the service's increasing ids). */
  groups: Map<number, string>;
  /** Domain (lowercase) -> group handle. */
  rules: Map<string, number>;
  /** User id -> group handle. */
  memberships: Map<number, number>;
  /** User id -> the activation whose rules made its membership, while no administrator changed it. */
  ruleMade: Map<number, Version>;
  /** User id -> where in event time its membership began: the activation that made it, or the record's version when an administrator did. */
  born: Map<number, Version>;
  /** The users whose membership a rule made (`automatic`): an administrator's move keeps that, a creation does not. */
  automatic: Set<number>;
  /** `course|group` pairs. */
  links: Set<string>;
  publics: Set<string>;
  /**
   * A link (`course|group`) or public record (`public:course`) -> the course's version when an
   * administrator made it: where it began in event time (an older deletion or move of the course,
   * arriving late, took it).
   */
  dependentBorn: Map<string, Version>;
}

export interface Decision {
  allowed: boolean;
  reason: 'feature_disabled' | 'public' | 'no_access' | 'group' | 'unknown_course';
}

/** The ORG of `course-v1:ORG+NUM+RUN`, or undefined for a key of another shape. */
export function keyOrg(key: string): string | undefined {
  return /^course-v1:([^+/:\s]+)\+[^+\s]+\+[^+\s]+$/.exec(key)?.[1];
}

/** What follows the last `@`, lowercased. */
export const domainOf = (email: string) => email.slice(email.lastIndexOf('@') + 1).toLowerCase();

const ACTIVATION_CAPABLE = (e: UserEvent) => e.kind === 'activated' || ((e.kind === 'registered' || e.kind === 'login') && e.user.is_active);

export class EventModel {
  private readonly users = new Map<number, UserTrack>();
  private readonly courses = new Map<string, CourseTrack>();
  private readonly states = new Map<string, OrgState>();
  private nextGroup = 1;
  /** What the deliveries did, for a test's report of what its histories covered. */
  readonly counts = { applied: 0, duplicate: 0, stale: 0, dead_lettered: 0, moves: 0, rulesApplied: 0, membershipsByRule: 0 };

  /** `defaultOrg`: the consumer's DEFAULT_ORGANIZATION, when set. */
  constructor(private readonly defaultOrg?: string) {}

  // ---- events -------------------------------------------------------------------------------

  /** Applies one delivered event (a redelivery too) and says what it was. */
  deliver(e: ModelEvent): Outcome {
    const outcome = this.apply(e);
    this.counts[outcome]++;
    return outcome;
  }

  private apply(e: ModelEvent): Outcome {
    const isUser = e.kind !== 'catalog' && e.kind !== 'courseDeleted';
    // A deletion names no organization: it follows the record wherever it is.
    const org = e.kind === 'courseDeleted' ? '' : this.eventOrg(e);
    if (org === null) return 'dead_lettered';
    const track: UserTrack | CourseTrack = isUser ? this.userTrack(e.kind === 'retired' ? e.userId : e.user.id) : this.courseTrack(e.key);
    const ident = JSON.stringify([e.source, e.id]);
    if (track.events.some((seen) => seen.ident === ident)) {
      // A duplicate adds nothing, but the membership is reconciled after it all the same.
      if (isUser) this.reconcile(track as UserTrack);
      return 'duplicate';
    }
    // Versions: newer than the record (or its tombstone) applies as time#1; the same time applies
    // after the ones before it; older is stale, with version time#0.
    const previous = track.version;
    let version: Version;
    let outcome: Outcome;
    if (previous === null || e.time > previous.t) [version, outcome] = [{ t: e.time, n: 1 }, 'applied'];
    else if (e.time === previous.t) [version, outcome] = [{ t: e.time, n: previous.n + 1 }, 'applied'];
    else [version, outcome] = [{ t: e.time, n: STALE_N }, 'stale'];
    track.events.push({ ident, outcome, version });
    if (outcome === 'applied') track.version = version;
    const applied = outcome === 'applied';

    switch (e.kind) {
      case 'catalog':
        if (applied) this.putCourse(track as CourseTrack, { key: e.key, org, name: e.name });
        // Stale, naming another organization: in event time the course was there then (a move and a move back), after the events of its time that arrived before it.
        else if ((track as CourseTrack).record && (track as CourseTrack).record!.org !== org)
          this.dropBornBefore((track as CourseTrack).record!, late(version));
        break;
      case 'courseDeleted':
        if (applied) this.dropCourse(track as CourseTrack);
        else if ((track as CourseTrack).record) this.dropBornBefore((track as CourseTrack).record!, late(version));
        break;
      case 'retired': {
        const t = track as UserTrack;
        // Applied: the record goes, and its log with it. Older than the record: a removal in its past.
        if (applied) this.dropUser(t);
        else if (t.record) this.raiseRemoved(t, this.lateAt(t, version));
        this.reconcile(t);
        break;
      }
      default:
        this.applyUserEvent(track as UserTrack, e, org, version, applied, previous);
        this.reconcile(track as UserTrack);
    }
    return outcome;
  }

  /** A user event that is no duplicate, at `version`; `previous`: the track's version before it. */
  private applyUserEvent(t: UserTrack, e: UserEvent, org: string, version: Version, applied: boolean, previous: Version | null) {
    const active = e.kind === 'activated' || e.user.is_active;
    const old = t.record;
    if (!applied) {
      // Stale against a tombstone: older than the retirement, it has no record to tell about.
      if (!old) return;
      // Stale, naming another organization: in event time the learner was elsewhere then, so
      // left this organization (what began before goes) and came back.
      if (old.org !== org) {
        this.raiseRemoved(t, this.lateAt(t, version));
        return;
      }
    } else {
      if (old && old.org !== org) {
        // A move: the membership stays behind and goes; the record here starts afresh.
        this.dropMembership(old.org, old.id);
        this.counts.moves++;
        t.adminAt = null;
        this.restartLog(t, previous as Version);
      } else if (!old && previous !== null) {
        // A record created after a retirement (its tombstone is `previous`).
        this.restartLog(t, previous);
      }
      t.record = { id: e.user.id, org, username: e.user.username, name: e.user.name, email: e.user.email, is_active: active };
    }
    // The rule is matched now, at arrival, whether or not this activation turns out to be the first of its period.
    const capable = ACTIVATION_CAPABLE(e);
    const v = applied ? version : this.lateAt(t, version);
    const dom = domainOf(e.user.email);
    if (capable) this.addToLog(t, { v, k: 'a', g: this.org(org).rules.get(dom) ?? null, n: ++t.arrived, dom });
    else this.addToLog(t, { v, k: active ? 'u' : 'd', g: null });
  }

  /** Where a late event of the learner's stands: after every event of its time seen so far. */
  private lateAt(t: UserTrack, v: Version): Version {
    return { t: v.t, n: LATE_BASE + ++t.lates };
  }

  /** The log starts again after `removed` (a move here, or a record created after a retirement). */
  private restartLog(t: UserTrack, removed: Version) {
    t.log = [];
    t.removed = removed;
  }

  /** A removal at `version`: the newest one counts, and what the log holds older than it goes. */
  private raiseRemoved(t: UserTrack, version: Version) {
    if (!newer(version, t.removed)) return;
    t.removed = version;
    t.log = t.log.filter((entry) => !newer(version, entry.v));
    if (t.barrierSince !== null && newer(version, t.barrierSince)) [t.barrier, t.barrierSince] = [0, null];
  }

  /**
   * Into the log in event time (a late event, LATE_BASE on, came after the entries of its time
   * already there: among equal times arrival decides); not when older than the removal.
   */
  private addToLog(t: UserTrack, entry: LogEntry) {
    if (t.removed !== null && newer(t.removed, entry.v)) return;
    const at = t.log.findIndex((other) => newer(other.v, entry.v));
    t.log.splice(at === -1 ? t.log.length : at, 0, entry);
  }

  /**
   * The entry whose rule the membership follows: the first, newer than the administrator's last
   * change (when there was one), that names a group that still exists and is either a period's
   * first activation (the log's start, and after each deactivation, open a period) or a rule
   * applied while the learner was active. A period's first activation in event time names the
   * group that the first of the period's activations with its email's domain to *arrive* matched:
   * the service applied the period's rules when it first saw the learner active.
   */
  private target(t: UserTrack, groups: Map<number, string>): LogEntry | null {
    const makes = (entry: LogEntry) => entry.g !== null && groups.has(entry.g) && newer(entry.v, t.adminAt) && entry.n! > t.barrier;
    let periodOpen = true;
    let active = true;
    for (const [i, entry] of t.log.entries()) {
      if (entry.k === 'd') {
        periodOpen = true;
        active = false;
      } else if (entry.k === 'u') {
        active = true;
      } else if (entry.k === 'j') {
        if (active && makes(entry)) return entry;
      } else {
        active = true;
        if (periodOpen) {
          periodOpen = false;
          const rest = t.log.slice(i);
          const end = rest.findIndex((other) => other.k === 'd');
          const period = (end === -1 ? rest : rest.slice(0, end)).filter((other) => other.k === 'a');
          const first = period.filter((other) => other.dom === entry.dom).reduce((a, other) => (other.n! < a.n! ? other : a));
          // Decided when the first of them arrived: with the rules, and the learner's group, of then.
          const applied = { ...entry, g: first.g, n: first.n };
          if (makes(applied)) return applied;
        }
      }
    }
    return null;
  }

  /**
   * Where an administrator's write or a rule's application takes its place: after every event the
   * record holds and every such write placed before it, before the record's next event.
   */
  private placeNow(t: UserTrack): Version {
    const v = t.version as Version;
    if (!sameVersion(v, t.placedAfter ?? undefined)) [t.placedAfter, t.placed] = [v, 0];
    return { t: v.t, n: v.n + 1 - 2 ** -++t.placed };
  }

  /** Brings the learner's membership in line with the log, after every user event. */
  private reconcile(t: UserTrack) {
    const rec = t.record;
    if (!rec) return;
    const o = this.org(rec.org);
    const born = o.born.get(rec.id);
    // A removal newer than the membership's beginning took it.
    if (o.memberships.has(rec.id) && born !== undefined && t.removed !== null && newer(t.removed, born)) this.dropMembership(rec.org, rec.id);
    const made = o.ruleMade.get(rec.id);
    // An administrator's membership, or one a rule made before the administrator's last change, stands.
    if (o.memberships.has(rec.id) && (made === undefined || (t.adminAt !== null && !newer(made, t.adminAt)))) return;
    const target = this.target(t, o.groups);
    if (target === null || target.g === null) {
      this.dropMembership(rec.org, rec.id);
      return;
    }
    if (sameVersion(target.v, made)) return;
    if (!o.memberships.has(rec.id)) this.counts.membershipsByRule++;
    this.counts.rulesApplied++;
    o.memberships.set(rec.id, target.g);
    o.ruleMade.set(rec.id, target.v);
    o.born.set(rec.id, target.v);
    o.automatic.add(rec.id);
  }

  private eventOrg(e: Exclude<ModelEvent, CourseDeletedEvent>): string | null {
    return e.organization ?? (e.kind === 'catalog' ? keyOrg(e.key) : undefined) ?? this.defaultOrg ?? null;
  }

  private dropMembership(org: string, user: number) {
    this.org(org).memberships.delete(user);
    this.org(org).ruleMade.delete(user);
    this.org(org).born.delete(user);
    this.org(org).automatic.delete(user);
  }

  /** A retirement applied: the record goes, with its membership and its log. */
  private dropUser(t: UserTrack) {
    if (t.record) this.dropMembership(t.record.org, t.record.id);
    t.record = null;
    t.adminAt = null;
    t.log = [];
    t.removed = null;
  }

  private putCourse(t: CourseTrack, course: CourseRecord) {
    if (t.record && t.record.org !== course.org) {
      this.dropCourseDependents(t.record);
      this.counts.moves++;
    }
    t.record = course;
  }

  private dropCourse(t: CourseTrack) {
    if (!t.record) return;
    this.dropCourseDependents(t.record);
    t.record = null;
  }

  /** A deletion or move of the course at `version`, arriving after a newer event: what an administrator hung on it before then went with it. */
  private dropBornBefore(course: CourseRecord, version: Version) {
    const o = this.org(course.org);
    for (const [id, born] of o.dependentBorn) {
      if (!newer(version, born)) continue;
      if (id === `public:${course.key}`) o.publics.delete(course.key);
      else if (id.startsWith(`${course.key}|`)) o.links.delete(id);
      else continue;
      o.dependentBorn.delete(id);
    }
  }

  private dropCourseDependents(course: CourseRecord) {
    const o = this.org(course.org);
    o.publics.delete(course.key);
    o.dependentBorn.delete(`public:${course.key}`);
    for (const link of o.links)
      if (link.startsWith(`${course.key}|`)) {
        o.links.delete(link);
        o.dependentBorn.delete(link);
      }
  }

  private userTrack(id: number): UserTrack {
    let t = this.users.get(id);
    if (!t) {
      t = {
        events: [],
        version: null,
        record: null,
        log: [],
        removed: null,
        adminAt: null,
        lates: 0,
        arrived: 0,
        barrier: 0,
        barrierSince: null,
        placedAfter: null,
        placed: 0,
      };
      this.users.set(id, t);
    }
    return t;
  }

  private courseTrack(key: string): CourseTrack {
    let t = this.courses.get(key);
    if (!t) {
      t = { events: [], version: null, record: null };
      this.courses.set(key, t);
    }
    return t;
  }

  private org(name: string): OrgState {
    let o = this.states.get(name);
    if (!o) {
      o = {
        flag: false,
        groups: new Map(),
        rules: new Map(),
        memberships: new Map(),
        ruleMade: new Map(),
        born: new Map(),
        automatic: new Set(),
        links: new Set(),
        publics: new Set(),
        dependentBorn: new Map(),
      };
      this.states.set(name, o);
    }
    return o;
  }

  // ---- admin writes (SPEC §3); each returns the HTTP status the service answers -------------

  setFlag(org: string, on: boolean): 200 {
    this.org(org).flag = on;
    return 200;
  }

  /** A new group; returns its handle (the model's stand-in for the service's id). */
  createGroup(org: string, name: string): number {
    const handle = this.nextGroup++;
    this.org(org).groups.set(handle, name);
    return handle;
  }

  /** The organization's groups, oldest first (the service lists them by increasing id). */
  groups(org: string): { handle: number; name: string }[] {
    return [...this.org(org).groups].map(([handle, name]) => ({ handle, name }));
  }

  /** Deleting a group deletes its memberships, rules and course links. */
  deleteGroup(org: string, group: number): 204 | 404 {
    const o = this.org(org);
    if (!o.groups.delete(group)) return 404;
    for (const [user, g] of o.memberships) {
      if (g !== group) continue;
      const born = o.born.get(user) ?? null;
      this.dropMembership(org, user);
      const t = this.users.get(user);
      if (t) [t.barrier, t.barrierSince] = [t.arrived, born];
    }
    for (const [domain, g] of o.rules) if (g === group) o.rules.delete(domain);
    for (const link of o.links)
      if (link.endsWith(`|${group}`)) {
        o.links.delete(link);
        o.dependentBorn.delete(link);
      }
    return 204;
  }

  createRule(org: string, domain: string, group: number): 201 | 400 {
    const o = this.org(org);
    const d = domain.toLowerCase();
    if (!o.groups.has(group) || o.rules.has(d)) return 400;
    o.rules.set(d, group);
    return 201;
  }

  deleteRule(org: string, domain: string): 204 | 404 {
    return this.org(org).rules.delete(domain.toLowerCase()) ? 204 : 404;
  }

  /** The user of `org` with this id, if the organization holds it. */
  user(org: string, id: number): UserRecord | null {
    const rec = this.users.get(id)?.record;
    return rec && rec.org === org ? rec : null;
  }

  course(org: string, key: string): CourseRecord | null {
    const rec = this.courses.get(key)?.record;
    return rec && rec.org === org ? rec : null;
  }

  membership(org: string, user: number): number | null {
    return this.org(org).memberships.get(user) ?? null;
  }

  createMembership(org: string, user: number, group: number): 201 | 400 {
    const o = this.org(org);
    if (!this.user(org, user) || !o.groups.has(group) || o.memberships.has(user)) return 400;
    o.memberships.set(user, group);
    o.automatic.delete(user);
    this.adminChanged(org, user);
    const at = this.users.get(user)?.adminAt;
    if (at) o.born.set(user, at);
    return 201;
  }

  moveMembership(org: string, user: number, group: number): 200 | 400 | 404 {
    const o = this.org(org);
    if (!o.memberships.has(user)) return 404;
    if (!o.groups.has(group)) return 400;
    o.memberships.set(user, group);
    this.adminChanged(org, user);
    // The membership is the administrator's from here (SPEC §5: their later change stands): a
    // removal older than the move, arriving later, leaves it, as it leaves one they created.
    const at = this.users.get(user)?.adminAt;
    if (at) o.born.set(user, at);
    return 200;
  }

  deleteMembership(org: string, user: number): 204 | 404 {
    if (!this.org(org).memberships.has(user)) return 404;
    this.dropMembership(org, user);
    this.adminChanged(org, user);
    return 204;
  }

  /** An administrator's change to a membership: no longer the rule's doing, and no activation older than it makes one. */
  private adminChanged(org: string, user: number) {
    this.org(org).ruleMade.delete(user);
    const t = this.users.get(user);
    if (t) t.adminAt = this.placeNow(t);
  }

  /**
   * `POST membership-rules/<id>/apply/`: every learner of the organization, active, with no
   * membership and an email of the rule's domain, joins its group (a `j` entry in their log, so
   * an older activation arriving later that makes a membership comes first). 404 without a rule.
   */
  applyRule(org: string, domain: string): { status: 200; created: number } | { status: 404 } {
    const o = this.org(org);
    const group = o.rules.get(domain.toLowerCase());
    if (group === undefined) return { status: 404 };
    let created = 0;
    for (const t of this.users.values()) {
      const rec = t.record;
      if (!rec || rec.org !== org || !rec.is_active || o.memberships.has(rec.id) || domainOf(rec.email) !== domain.toLowerCase()) continue;
      this.addToLog(t, { v: this.placeNow(t), k: 'j', g: group, n: ++t.arrived });
      this.reconcile(t);
      if (o.memberships.get(rec.id) === group) created++;
    }
    return { status: 200, created };
  }

  link(org: string, key: string, group: number): 201 | 400 {
    const o = this.org(org);
    const id = `${key}|${group}`;
    if (!this.course(org, key) || !o.groups.has(group) || o.links.has(id)) return 400;
    o.links.add(id);
    o.dependentBorn.set(id, this.courses.get(key)!.version!);
    return 201;
  }

  unlink(org: string, key: string, group: number): 204 | 404 {
    this.org(org).dependentBorn.delete(`${key}|${group}`);
    return this.org(org).links.delete(`${key}|${group}`) ? 204 : 404;
  }

  makePublic(org: string, key: string): 201 | 400 {
    const o = this.org(org);
    if (!this.course(org, key) || o.publics.has(key)) return 400;
    o.publics.add(key);
    o.dependentBorn.set(`public:${key}`, this.courses.get(key)!.version!);
    return 201;
  }

  makePrivate(org: string, key: string): 204 | 404 {
    this.org(org).dependentBorn.delete(`public:${key}`);
    return this.org(org).publics.delete(key) ? 204 : 404;
  }

  // ---- what the REST API should show -----------------------------------------------------------

  /** Every organization anything happened in. */
  orgs(): string[] {
    const names = new Set(this.states.keys());
    for (const t of this.users.values()) if (t.record) names.add(t.record.org);
    for (const t of this.courses.values()) if (t.record) names.add(t.record.org);
    return [...names].sort();
  }

  /** One organization as the REST API shows it, with group handles for group ids. */
  view(org: string) {
    const o = this.org(org);
    const users = [...this.users.values()]
      .flatMap((t) => (t.record?.org === org ? [t.record] : []))
      .sort((a, b) => a.id - b.id)
      .map((u) => ({ id: u.id, username: u.username, name: u.name, email: u.email, group: o.memberships.get(u.id) ?? null }));
    const courses = [...this.courses.values()]
      .flatMap((t) => (t.record?.org === org ? [t.record] : []))
      .sort((a, b) => (a.key < b.key ? -1 : 1))
      .map((c) => ({
        id: c.key,
        name: c.name,
        is_public: o.publics.has(c.key),
        groups: [...o.links].filter((l) => l.startsWith(`${c.key}|`)).map((l) => Number(l.slice(c.key.length + 1))),
      }));
    return {
      flag: o.flag,
      groups: this.groups(org),
      rules: [...o.rules].map(([domain, group]) => ({ domain, group })),
      users,
      memberships: [...o.memberships].map(([user, group]) => ({ user, group, automatic: o.automatic.has(user) })),
      courses,
      links: [...o.links].map((l) => ({ course: l.slice(0, l.lastIndexOf('|')), group: Number(l.slice(l.lastIndexOf('|') + 1)) })),
      publics: [...o.publics],
    };
  }

  /** SPEC §4, in the course's organization (no staff, no site administrators in these histories). */
  decide(userId: number | null, key: string): Decision {
    const course = this.courses.get(key)?.record;
    if (!course) return { allowed: false, reason: 'unknown_course' };
    const o = this.org(course.org);
    if (!o.flag) return { allowed: true, reason: 'feature_disabled' };
    if (o.publics.has(key)) return { allowed: true, reason: 'public' };
    const user = userId === null ? null : this.user(course.org, userId);
    if (!user?.is_active) return { allowed: false, reason: 'no_access' };
    const group = o.memberships.get(user.id);
    if (group !== undefined && o.links.has(`${key}|${group}`)) return { allowed: true, reason: 'group' };
    return { allowed: false, reason: 'no_access' };
  }

  // ---- several possible arrival orders ----------------------------------------------------------

  /** An independent copy (the events seen, the records, the organizations, the counts). */
  clone(): EventModel {
    const copy = new EventModel(this.defaultOrg);
    for (const [id, t] of structuredClone(this.users)) copy.users.set(id, t);
    for (const [key, t] of structuredClone(this.courses)) copy.courses.set(key, t);
    for (const [name, o] of structuredClone(this.states)) copy.states.set(name, o);
    copy.nextGroup = this.nextGroup;
    Object.assign(copy.counts, this.counts);
    return copy;
  }

  /**
   * Everything that decides what later events and admin writes do, and what the API shows; not
   * the order the events arrived in (a record's events as a sorted set of identities) nor the counts.
   */
  state(): string {
    const canonical = (_: string, v: unknown) =>
      v instanceof Map ? [...v].sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1)) : v instanceof Set ? [...v].sort() : v;
    // Of the activations' arrivals only their order among the log's activations decides (`target`).
    const ranked = (log: LogEntry[]) => {
      const order = log.flatMap((e) => (e.n === undefined ? [] : [e.n])).sort((a, b) => a - b);
      return log.map((e) => (e.n === undefined ? e : { ...e, n: order.indexOf(e.n) }));
    };
    const tracks = <T extends Track>(m: Map<unknown, T>) =>
      [...m]
        .map(([k, t]) => {
          const { arrived: _, ...rest } = t as T & { arrived?: number; log?: LogEntry[] };
          return [k, { ...rest, ...(rest.log ? { log: ranked(rest.log) } : {}), events: t.events.map((e) => e.ident).sort() }];
        })
        .sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1));
    return JSON.stringify([tracks(this.users), tracks(this.courses), this.states, this.nextGroup], canonical);
  }

  /** For a failure report: what a record saw, in arrival order. */
  trace(record: { user: number } | { course: string }) {
    const t = 'user' in record ? this.users.get(record.user) : this.courses.get(record.course);
    return t?.events.map((e) => `${e.ident} ${e.outcome} ${e.version.t}#${e.version.n}`) ?? [];
  }
}

/** The record an event is about: the model's events of one record are applied one at a time. */
export const recordOf = (e: ModelEvent): string =>
  e.kind === 'catalog' || e.kind === 'courseDeleted' ? `course:${e.key}` : `user:${e.kind === 'retired' ? e.userId : e.user.id}`;

/**
 * Every state a model in one of `models` can reach when `events` arrive in any order their lanes
 * allow: the events of one lane (a topic's partition: one record's events on one topic share
 * its key, so its partition) in the order given, the lanes interleaved in every way. One model per
 * distinct state. Records are independent between two admin writes (what an event touches is its
 * own record, and its membership or links), so each record's interleavings are explored on their
 * own, breadth first, merging equal states at each step: the cost is the number of distinct
 * states, not of orders.
 */
export function deliverInAnyOrder(models: EventModel[], events: { event: ModelEvent; lane: string }[]): EventModel[] {
  const byRecord = new Map<string, Map<string, ModelEvent[]>>();
  for (const { event, lane } of events) {
    const lanes = byRecord.get(recordOf(event)) ?? new Map<string, ModelEvent[]>();
    byRecord.set(recordOf(event), lanes);
    lanes.set(lane, [...(lanes.get(lane) ?? []), event]);
  }
  let current = models;
  for (const lanes of byRecord.values()) {
    const queues = [...lanes.values()];
    if (queues.length === 1) {
      for (const m of current) for (const e of queues[0]!) m.deliver(e);
      continue;
    }
    // Layer k: every position (how far each lane got, k events in all) -> its distinct states.
    let layer = new Map<string, { at: number[]; states: Map<string, EventModel> }>([
      [queues.map(() => 0).join(), { at: queues.map(() => 0), states: new Map(current.map((m) => [m.state(), m])) }],
    ]);
    const total = queues.reduce((n, q) => n + q.length, 0);
    for (let k = 0; k < total; k++) {
      const next = new Map<string, { at: number[]; states: Map<string, EventModel> }>();
      for (const { at, states } of layer.values()) {
        queues.forEach((q, i) => {
          if (at[i]! >= q.length) return;
          const to = at.map((n, j) => (j === i ? n + 1 : n));
          const slot = next.get(to.join()) ?? { at: to, states: new Map<string, EventModel>() };
          next.set(to.join(), slot);
          for (const m of states.values()) {
            const copy = m.clone();
            copy.deliver(q[at[i]!]!);
            const key = copy.state();
            if (!slot.states.has(key)) slot.states.set(key, copy);
          }
        });
      }
      layer = next;
    }
    current = [...[...layer.values()][0]!.states.values()];
  }
  return current;
}
