/**
 * A reference model of the event path: docs/events.md "How each event is applied: identity,
 * order, activations, deletions", SPEC §3's cascades and SPEC §4's access decision, as far as the
 * event-history property test (test/integration/events-model.test.ts) reaches. Pure, no I/O.
 *
 * Written independently of src/ and as plainly as possible: where the service keeps bounded
 * fields (`event_time`, `event_n`, the `event_ids` of the newest time, tombstones), the model keeps every
 * identity it has seen per record and the full list of its distinct events, so a disagreement
 * points at the service's bookkeeping, not at a shared shortcut. One limit is shared on purpose,
 * as docs/events.md states it: a late activation applies the rules only in the learner's first
 * activation period (the service keeps the first and last deactivation, not those between). It knows nothing of staff or
 * site administrators: the generator never sends those flags.
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
 * An event's version: its time, then its position among the applied events of that time. A stale
 * event comes after every event of its time seen before it (among equal times arrival decides):
 * STALE_N.
 */
export interface Version {
  t: number;
  n: number;
}
/** a is newer than b; anything is newer than nothing. */
const STALE_N = 0;
export const newer = (a: Version, b: Version | null): boolean => b === null || a.t > b.t || (a.t === b.t && a.n > b.n);
const max = (a: Version | null, b: Version): Version => (newer(b, a) ? b : (a as Version));
const min = (a: Version | null, b: Version): Version => (a === null || newer(a, b) ? b : a);

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
interface UserTrack extends Track {
  record: UserRecord | null;
  /** Newest version of an event that showed the learner inactive (a retirement, a move's old record). */
  deact: Version | null;
  /** Version of the activation whose rules were applied last. */
  act: Version | null;
  /** The newest applied activation-capable event that showed the learner active (`act_seen_v`). */
  seen: Version | null;
  /** The oldest deactivation, and the oldest activation whose rules were applied: the first activation period. */
  firstDeact: Version | null;
  firstAct: Version | null;
  /** A retirement or a move deleted what the activations before it made: none applies late. */
  settled: boolean;
  /** The email of the event `seen` names: a claim of that activation matches its rules with it. */
  seenEmail: string | null;
  /** The email of the activation `act`. */
  actEmail: string | null;
  /** Where in event time an administrator last changed the membership: the record's version then. A late activation older than it changes nothing. */
  adminAt: Version | null;
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
  /** `course|group` pairs. */
  links: Set<string>;
  publics: Set<string>;
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
  readonly counts = { applied: 0, duplicate: 0, stale: 0, dead_lettered: 0, moves: 0, rulesApplied: 0, membershipsByRule: 0, betweenDeactivations: 0 };

  /**
   * `defaultOrg`: the consumer's DEFAULT_ORGANIZATION, when set. `limits`: how often any copy of
   * this model met the limit docs/events.md states (shared by every clone, so a state merged away
   * still counts).
   */
  constructor(
    private readonly defaultOrg?: string,
    readonly limits = { betweenDeactivations: 0 },
  ) {}

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
    if (track.events.some((seen) => seen.ident === ident)) return 'duplicate';
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
        break;
      case 'courseDeleted':
        if (applied) this.dropCourse(track as CourseTrack);
        break;
      case 'retired': {
        const t = track as UserTrack;
        this.deactivate(t, version);
        t.settled = true;
        if (applied) this.dropUser(t);
        // A retirement older than the record is a deactivation in its past: the newest activation
        // the record reflects may now be one newer than the last deactivation.
        else if (t.record) {
          this.dropBornBefore(t, version);
          this.settleActivation(t, t.seen, t.seenEmail);
        }
        break;
      }
      default: {
        const t = track as UserTrack;
        const active = e.kind === 'activated' || e.user.is_active;
        if (!active) this.deactivate(t, version);
        if (!applied && outcome === 'stale' && t.record && t.record.org !== org) {
          // A stale event of another organization: in event time the learner was elsewhere then,
          // so it left its organization (what rules made before goes) and came back.
          this.deactivate(t, version);
          t.settled = true;
          this.dropBornBefore(t, version);
          this.settleActivation(t, t.seen, t.seenEmail);
          break;
        }
        if (applied) {
          const old = t.record;
          if (old && old.org !== org) {
            // A move: the membership stays behind and goes; the old record counts as a deactivation.
            this.dropMembership(old.org, old.id);
            this.deactivate(t, previous as Version);
            t.settled = true;
            this.counts.moves++;
            t.adminAt = null;
          }
          t.record = { id: e.user.id, org, username: e.user.username, name: e.user.name, email: e.user.email, is_active: active };
        }
        const rec = t.record;
        const capable = ACTIVATION_CAPABLE(e);
        if (applied && capable) [t.seen, t.seenEmail] = [version, e.user.email];
        // This event, or the newest activation the record reflects (a deactivation older than it
        // may have arrived after it: in event time, it came first).
        const activation = capable ? max(t.seen, version) : t.seen;
        if (this.settleActivation(t, activation, activation === version ? e.user.email : t.seenEmail) || !capable || !rec) break;
        if (this.lateFirstActivation(t, version)) {
          // Older than every deactivation, in a first period no activation applied: in event time
          // it applied the rules while the learner was active, and the membership outlived the
          // deactivation. (The service keeps the first and last deactivation only: an activation
          // between two deactivations that both came before it applies nothing, here too.)
          t.firstAct = min(t.firstAct, version);
          this.counts.rulesApplied++;
          this.applyLate(t, rec.org, e.user.email, version, null);
        } else if (t.act !== null && newer(t.act, t.deact) && newer(version, t.deact) && t.act.t > version.t) {
          // Older than the activation claimed in its period, which was therefore not the first:
          // in event time this one applied the rules, and the claimed one applied none.
          const superseded = t.act;
          t.act = version;
          t.actEmail = e.user.email;
          t.firstAct = min(t.firstAct, version);
          this.counts.rulesApplied++;
          this.applyLate(t, rec.org, e.user.email, version, superseded);
        } else if (
          !t.settled &&
          t.firstAct !== null &&
          t.firstDeact !== null &&
          newer(t.firstDeact, t.firstAct) &&
          newer(t.firstDeact, version) &&
          t.firstAct.t > version.t
        ) {
          // The same, in the first period (before the first deactivation).
          const superseded = t.firstAct;
          t.firstAct = version;
          this.counts.rulesApplied++;
          this.applyLate(t, rec.org, e.user.email, version, superseded);
        } else if (!applied && t.firstDeact !== null && newer(version, t.firstDeact) && t.deact !== null && newer(t.deact, version)) {
          // The limit docs/events.md states: an activation between the first and the last
          // deactivation, arriving after both, applies nothing (nor here).
          this.counts.betweenDeactivations++;
          this.limits.betweenDeactivations++;
        }
      }
    }
    return outcome;
  }

  /** Applies the rules at `activation` (whose event had `email`) when it is one whose rules are not applied yet; true when it did. */
  private settleActivation(t: UserTrack, activation: Version | null, email: string | null): boolean {
    const rec = t.record;
    if (activation === null || !rec?.is_active || !newer(activation, t.deact) || (t.act !== null && newer(t.act, t.deact))) return false;
    t.act = activation;
    t.actEmail = email ?? rec.email;
    if (newer(activation, t.seen)) [t.seen, t.seenEmail] = [activation, email];
    t.firstAct = min(t.firstAct, activation);
    this.counts.rulesApplied++;
    this.applyRules(rec.org, rec.id, email ?? rec.email, activation);
    return true;
  }

  /**
   * The rules of an activation older than the one whose rules made the learner's membership
   * (which an administrator left as it was): in event time this one came first, so the
   * membership is what its email matches. When it matches nothing, the membership goes if the
   * activation it supersedes in its period made it (`superseded`: no activation in event time).
   * With no membership, it applies the rules unless an administrator changed the membership since.
   */
  private applyLate(t: UserTrack, org: string, email: string, version: Version, superseded: Version | null) {
    const o = this.org(org);
    const id = t.record!.id;
    const made = o.ruleMade.get(id);
    if (t.adminAt !== null && !newer(version, t.adminAt)) return;
    if (!o.memberships.has(id)) {
      this.applyRules(org, id, email, version);
      return;
    }
    if (made === undefined || made.t <= version.t) return;
    const group = o.rules.get(domainOf(email));
    if (group !== undefined) {
      o.memberships.set(id, group);
      o.ruleMade.set(id, version);
      o.born.set(id, version);
    } else if (superseded !== null && made.t === superseded.t && made.n === superseded.n) {
      o.memberships.delete(id);
      o.ruleMade.delete(id);
      this.reapplyClaim(t, version, superseded);
    }
  }

  /**
   * After a late event removed a rule's membership, the claimed activation newer than it (not the
   * one superseded), which found that membership, applies its rules to none, as in event time;
   * unless an administrator acted after it.
   */
  private reapplyClaim(t: UserTrack, version: Version, superseded: Version | null) {
    const claim = t.act;
    if (!t.record || claim === null || claim.t <= version.t || (superseded !== null && claim.t === superseded.t && claim.n === superseded.n)) return;
    if (t.adminAt !== null && newer(t.adminAt, claim)) return;
    this.applyRules(t.record.org, t.record.id, t.actEmail ?? t.record.email, claim);
  }

  private deactivate(t: UserTrack, version: Version) {
    // The same limit from the other side: a deactivation arriving late before an activation the
    // record reflects, itself before the last deactivation, makes that activation the first of a
    // period the record does not keep; it is not claimed (nor here).
    if (t.seen !== null && t.deact !== null && newer(t.seen, version) && newer(t.deact, t.seen) && !newer(version, t.deact)) {
      this.counts.betweenDeactivations++;
      this.limits.betweenDeactivations++;
    }
    t.deact = max(t.deact, version);
    t.firstDeact = min(t.firstDeact, version);
  }

  private lateFirstActivation(t: UserTrack, version: Version): boolean {
    if (t.settled || t.firstDeact === null || !newer(t.firstDeact, version)) return false;
    return t.firstAct === null || newer(t.firstAct, t.firstDeact);
  }

  private eventOrg(e: Exclude<ModelEvent, CourseDeletedEvent>): string | null {
    return e.organization ?? (e.kind === 'catalog' ? keyOrg(e.key) : undefined) ?? this.defaultOrg ?? null;
  }

  private applyRules(org: string, user: number, email: string, version: Version) {
    const o = this.org(org);
    const group = o.rules.get(domainOf(email));
    if (group !== undefined && !o.memberships.has(user)) {
      o.memberships.set(user, group);
      o.ruleMade.set(user, version);
      o.born.set(user, version);
      this.counts.membershipsByRule++;
    }
  }

  /**
   * Deletes the learner's membership when it began before `version` in event time (a retirement
   * or a move then deleted it); the claim newer than it applies again.
   */
  private dropBornBefore(t: UserTrack, version: Version) {
    const rec = t.record!;
    const born = this.org(rec.org).born.get(rec.id);
    if (born === undefined || !newer(version, born)) return;
    this.dropMembership(rec.org, rec.id);
    this.reapplyClaim(t, version, null);
  }

  private dropMembership(org: string, user: number) {
    this.org(org).memberships.delete(user);
    this.org(org).ruleMade.delete(user);
    this.org(org).born.delete(user);
  }

  private dropUser(t: UserTrack) {
    if (!t.record) return;
    this.dropMembership(t.record.org, t.record.id);
    t.record = null;
    t.adminAt = null;
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

  private dropCourseDependents(course: CourseRecord) {
    const o = this.org(course.org);
    o.publics.delete(course.key);
    for (const link of o.links) if (link.startsWith(`${course.key}|`)) o.links.delete(link);
  }

  private userTrack(id: number): UserTrack {
    let t = this.users.get(id);
    if (!t) {
      t = {
        events: [],
        version: null,
        record: null,
        deact: null,
        act: null,
        seen: null,
        firstDeact: null,
        firstAct: null,
        settled: false,
        seenEmail: null,
        actEmail: null,
        adminAt: null,
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
        links: new Set(),
        publics: new Set(),
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
    for (const [user, g] of o.memberships) if (g === group) this.dropMembership(org, user);
    for (const [domain, g] of o.rules) if (g === group) o.rules.delete(domain);
    for (const link of o.links) if (link.endsWith(`|${group}`)) o.links.delete(link);
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
    return 200;
  }

  deleteMembership(org: string, user: number): 204 | 404 {
    if (!this.org(org).memberships.delete(user)) return 404;
    this.adminChanged(org, user);
    return 204;
  }

  /** An administrator's change to a membership: no longer the rule's doing, and it stands against a late activation. */
  private adminChanged(org: string, user: number) {
    this.org(org).ruleMade.delete(user);
    const t = this.users.get(user);
    if (t) t.adminAt = t.version;
  }

  link(org: string, key: string, group: number): 201 | 400 {
    const o = this.org(org);
    const id = `${key}|${group}`;
    if (!this.course(org, key) || !o.groups.has(group) || o.links.has(id)) return 400;
    o.links.add(id);
    return 201;
  }

  unlink(org: string, key: string, group: number): 204 | 404 {
    return this.org(org).links.delete(`${key}|${group}`) ? 204 : 404;
  }

  makePublic(org: string, key: string): 201 | 400 {
    const o = this.org(org);
    if (!this.course(org, key) || o.publics.has(key)) return 400;
    o.publics.add(key);
    return 201;
  }

  makePrivate(org: string, key: string): 204 | 404 {
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
      memberships: [...o.memberships].map(([user, group]) => ({ user, group })),
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
    const copy = new EventModel(this.defaultOrg, this.limits);
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
    const tracks = <T extends Track>(m: Map<unknown, T>) =>
      [...m].map(([k, t]) => [k, { ...t, events: t.events.map((e) => e.ident).sort() }]).sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1));
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
