/**
 * Random event histories for the event-history property test (test/integration/events-model.test.ts):
 * the steps (LMS events, redeliveries, admin writes, a SIGKILL of the consumer), their
 * fast-check arbitrary, and how an event step becomes both a Kafka message and a model event.
 * A history is a plain JSON array, so a failure prints it as it is.
 */
import fc from 'fast-check';
import type { ModelEvent, UserEventKind } from './event-model';
import { TYPES } from './events';

/** Organizations (as an org UUID would be named: never the ORG of a course key but by chance). */
export const ORGS = ['tenant-a', 'tenant-b', 'tenant-c'] as const;
/** `DEFAULT_ORGANIZATION` of the consumer: where a user event without `organization` goes. */
export const DEFAULT_ORG = ORGS[0];
export const USER_IDS = [101, 102, 103, 104, 105] as const;
/** The ORG of course i's key: two codes no event names as `organization`, and two that are organizations. */
const KEY_ORGS = ['ORGX', 'tenant-b', 'ORGY', 'tenant-a'] as const;
export const COURSE_KEYS = KEY_ORGS.map((org, i) => `course-v1:${org}+C${i}+R`);
/** Rules are only ever made for these domains; emails mostly use them (in any case), now and then one without a rule. */
const RULE_DOMAINS = ['uni.edu', 'corp.com', 'other.org'] as const;
const emailDomain = fc.oneof(
  { weight: 3, arbitrary: fc.constant('uni.edu') },
  { weight: 1, arbitrary: fc.constant('UNI.edu') },
  { weight: 2, arbitrary: fc.constant('corp.com') },
  { weight: 1, arbitrary: fc.constant('other.org') },
  { weight: 1, arbitrary: fc.constant('mail.net') },
);
/** A learner's email in the composite steps (bursts, twins, ties, races). */
const learnerEmail = fc.tuple(fc.constantFrom('ann', 'bea'), emailDomain).map(([local, domain]) => `${local}@${domain}`);
export const SOURCES = ['openedx/lms/web', 'openedx/lms/worker'] as const;
/**
 * Three seconds before midnight UTC: step time 3 is 00:00:00, so a leap second (LEAP, `23:59:60Z`:
 * the CloudEvents schema's date-time takes `:60` only as the day's last second in UTC) is drawn often.
 */
const BASE_TIME = Date.parse('2026-02-28T23:59:57Z');
/** The `fmt` of an event sent without `time`: ordered by its Kafka timestamp, set to the same instant. */
export const UNTIMED = 4;
/**
 * The `fmt` of an event one nanosecond before its step time (`t - 1e-9` in the model): written as
 * the leap second `23:59:60Z` when that is the last instant of a day (SPEC §5), else as `…:59.999999999`.
 */
export const LEAP = 5;
/** The model's time of an event step (`t`, or one nanosecond before it: LEAP). */
export const stepTime = (step: { t: number; fmt: number }) => (step.fmt === LEAP ? step.t - 1e-9 : step.t);
/** How far before its first record a twin's earlier record is stamped (seconds; the model's time moves back as much). */
export const EARLIER_BY = 2;
/** The name of the first event of a tiedAgain or tiedGone step, and of a race's events (the test counts them). */
export const TIED = 'Tied';
export const RACER = 'Racer';
/** More events of one time and one learner than a record once remembered identities for (16). */
export const BURST = 17;

interface EventFields {
  /** Event time in seconds after BASE_TIME: few values, so equal and older times are common. */
  t: number;
  /** How `time` is written (the same instant, several RFC 3339 spellings); UNTIMED: no `time`, the Kafka timestamp is the instant. */
  fmt: number;
  src: 0 | 1;
  /** Binary mode (ce_* headers) instead of structured. */
  bin: boolean;
}

export type Step =
  | ({ do: 'user'; type: UserEventKind; user: number; org: string | null; active: boolean; email: string; name: string } & EventFields)
  | ({ do: 'retire'; user: number; org: string | null } & EventFields)
  | ({ do: 'course'; course: string; org: string | null; name: string } & EventFields)
  | ({ do: 'delete'; course: string } & EventFields)
  /**
   * Sends again the message sent `back` messages ago (0: the last one, a duplicate); `fresh`: as
   * a new Kafka record with a later timestamp (a producer's retry), not the same record;
   * `earlier`: an event without `time` as a new record on another topic, stamped EARLIER_BY
   * seconds before (the copy the LMS sent first, read last), while the event is not modelled yet.
   */
  | { do: 'again'; back: number; fresh?: boolean; earlier?: boolean }
  /** SIGKILL the consumer once it handled `after` more messages (as far as there are), then start another. */
  | { do: 'kill'; after: number }
  | { do: 'flag'; org: string; on: boolean }
  | { do: 'group'; org: string }
  /** `g`: the index, modulo their number, of a group in the organization's list (by id). */
  | { do: 'ungroup'; org: string; g: number }
  | { do: 'rule'; org: string; domain: string; g: number }
  | { do: 'unrule'; org: string; domain: string }
  /** `POST membership-rules/<id>/apply/`: the rule of `domain` applied to the learners already there. */
  | { do: 'apply'; org: string; domain: string }
  | { do: 'member'; org: string; user: number; g: number }
  | { do: 'unmember'; org: string; user: number }
  | { do: 'move'; org: string; user: number; g: number }
  | { do: 'link'; org: string; course: string; g: number }
  | { do: 'unlink'; org: string; course: string; g: number }
  | { do: 'public'; org: string; course: string; on: boolean };

export type EventStep = Extract<Step, { t: number }>;
export const isEvent = (s: Step): s is EventStep => 't' in s;
export const isAdmin = (s: Step) => !isEvent(s) && s.do !== 'again' && s.do !== 'kill';

/** How many organizations, learners and courses a history uses. */
interface Sizes {
  orgs: number;
  users: number;
  courses: number;
}

/** Steps are drawn over the largest universe with indices, then bound to the history's sizes. */
type Raw = { kind: string; [field: string]: unknown };

const eventFields = fc.record({
  t: fc.nat(5),
  fmt: fc.nat(LEAP),
  src: fc.oneof({ weight: 4, arbitrary: fc.constant(0 as const) }, { weight: 1, arbitrary: fc.constant(1 as const) }),
  bin: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});
/** An event's organization: the record's home one mostly, another now and then (a move), or none. */
const eventOrg = fc.oneof(
  { weight: 5, arbitrary: fc.constant('home' as const) },
  { weight: 3, arbitrary: fc.nat(2) },
  { weight: 1, arbitrary: fc.constant(null) },
);
const idx = (n: number) => fc.nat(n - 1);
const g = fc.nat(3);
/** An admin write about a learner or a course, mostly in the organization that record usually lives in. */
const adminOrg = fc.oneof({ weight: 3, arbitrary: fc.constant('home' as const) }, { weight: 1, arbitrary: fc.nat(2) });

/** About three events to one admin write: events are cheap, an admin write waits for the consumer. */
const rawStep: fc.Arbitrary<Raw> = fc.oneof(
  {
    weight: 36,
    arbitrary: fc.record({
      kind: fc.constant('user'),
      type: fc.constantFrom<UserEventKind>('activated', 'registered', 'login', 'updated'),
      user: idx(5),
      org: eventOrg,
      active: fc.boolean(),
      email: fc.tuple(fc.constantFrom('ann', 'a.b', 'x@y'), emailDomain).map(([local, domain]) => `${local}@${domain}`),
      name: fc.constantFrom('Ann', 'Bea', 'Cy'),
      ev: eventFields,
    }),
  },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('retire'), user: idx(5), org: eventOrg, ev: eventFields }) },
  {
    weight: 12,
    arbitrary: fc.record({ kind: fc.constant('course'), course: idx(4), org: eventOrg, name: fc.constantFrom('Intro', 'Advanced'), ev: eventFields }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('delete'), course: idx(4), ev: eventFields }) },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('again'), back: fc.oneof(fc.constant(0), fc.nat(30)), fresh: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('burst'),
      user: idx(5),
      email: learnerEmail,
      ev: eventFields,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('twin'),
      course: fc.option(idx(4), { nil: undefined, freq: 3 }),
      user: idx(5),
      type: fc.constantFrom<UserEventKind>('activated', 'registered', 'login', 'updated'),
      active: fc.boolean(),
      email: learnerEmail,
      between: fc.constantFrom('updated', 'login', 'gone'),
      betweenActive: fc.boolean(),
      ev: eventFields,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('tiedAgain'),
      user: idx(5),
      first: fc.constantFrom('registered', 'login'),
      second: fc.constantFrom('activated', 'updated'),
      email: learnerEmail,
      ev: eventFields,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('tiedGone'),
      course: fc.option(idx(4), { nil: undefined, freq: 2 }),
      user: idx(5),
      lateDeletion: fc.boolean(),
      email: learnerEmail,
      g,
      ev: eventFields,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('race'),
      users: fc.uniqueArray(idx(5), { minLength: 2, maxLength: 3 }),
      email: learnerEmail,
      ev: eventFields,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('lateRule'), user: idx(5), domain: fc.constantFrom(...RULE_DOMAINS), g, ev: eventFields }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('kill'), after: fc.nat(4) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flag'), org: idx(3), on: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('group'), org: idx(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('ungroup'), org: idx(3), g }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('rule'), org: idx(3), domain: fc.constantFrom(...RULE_DOMAINS), g }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unrule'), org: idx(3), domain: fc.constantFrom(...RULE_DOMAINS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('apply'), org: idx(3), domain: fc.constantFrom(...RULE_DOMAINS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('member'), org: adminOrg, user: idx(5), g }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('unmember'), org: adminOrg, user: idx(5) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('move'), org: adminOrg, user: idx(5), g }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('link'), org: adminOrg, course: idx(4), g }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unlink'), org: adminOrg, course: idx(4), g }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('public'), org: adminOrg, course: idx(4), on: fc.boolean() }) },
);

/**
 * A start that makes rules matter: in each organization a group or two, rules into them, and
 * the flag (the first ones, when fewer organizations are used).
 */
const rawSetup = fc.array(fc.record({ groups: fc.integer({ min: 1, max: 2 }), rules: fc.subarray([...RULE_DOMAINS], { maxLength: 3 }), flag: fc.boolean() }), {
  minLength: 3,
  maxLength: 3,
});

/**
 * Step `i` of the history: its time is the drawn one plus i/5, so later events tend to be newer.
 * A burst is several steps: an activation, the administrator removing the learner's membership,
 * BURST updates showing the learner inactive, all of one time, then the activation delivered
 * again (a duplicate only if every identity is kept).
 */
function bind(raw: Raw, s: Sizes, i: number): Step | Step[] {
  const r = raw as Raw & Record<string, any>;
  // A new object: the drawn value is fast-check's, and shrinking maps it again.
  const ev = r.ev && { ...r.ev, t: r.ev.t + Math.floor(i / 5) };
  const org = (i: number) => ORGS[i % s.orgs]!;
  const user = (i: number) => USER_IDS[i % s.users]!;
  const course = (i: number) => COURSE_KEYS[i % s.courses]!;
  // A user's home organization is fixed by its index, a course's by its key.
  const named = (o: 'home' | number | null, home: number) => (o === null ? null : org(o === 'home' ? home : o));
  switch (r.kind) {
    case 'user':
      return { do: 'user', type: r.type, user: user(r.user), org: named(r.org, r.user % s.users), active: r.active, email: r.email, name: r.name, ...ev };
    case 'retire':
      return { do: 'retire', user: user(r.user), org: named(r.org, r.user % s.users), ...ev };
    case 'course':
      return { do: 'course', course: course(r.course), org: named(r.org, r.course % s.courses), name: r.name, ...ev };
    case 'delete':
      return { do: 'delete', course: course(r.course), ...ev };
    case 'again':
      return { do: 'again', back: r.back, fresh: r.fresh };
    case 'burst': {
      // Newer than what the history sent so far: a burst older than the learner's record would be stale, and show nothing.
      const at = { ...ev, t: ev.t + 6, src: 0 as const };
      const one = (type: UserEventKind, active: boolean): Step => ({
        do: 'user',
        type,
        user: user(r.user),
        org: named('home', r.user % s.users),
        active,
        email: r.email,
        name: 'Bursty',
        ...at,
      });
      const home = named('home', r.user % s.users)!;
      // The administrator removes the membership the activation's rule made: only a second application of it brings one back.
      return [
        one('activated', true),
        { do: 'unmember', org: home, user: user(r.user) },
        ...Array.from({ length: BURST }, () => one('updated', false)),
        { do: 'again', back: BURST },
      ];
    }
    case 'twin': {
      // An event without `time` whose first record is stamped EARLIER_BY seconds after its second
      // (on another topic), and an event of the same record timed between the two.
      const late = { ...ev, t: ev.t + EARLIER_BY, fmt: UNTIMED, src: 0 as const };
      const between = { ...ev, t: ev.t + 1, fmt: ev.fmt === UNTIMED ? 0 : ev.fmt };
      const home = (i: number, n: number) => named('home', i % n);
      if (r.course !== undefined) {
        const key = course(r.course);
        const org = home(r.course, s.courses);
        return [
          { do: 'course', course: key, org, name: 'Twin', ...late },
          r.between === 'gone' ? { do: 'delete', course: key, ...between } : { do: 'course', course: key, org, name: 'Between', ...between },
          { do: 'again', back: 1, earlier: true },
        ];
      }
      const id = user(r.user);
      const org = home(r.user, s.users);
      return [
        { do: 'user', type: r.type, user: id, org, active: r.active, email: r.email, name: 'Twin', ...late },
        r.between === 'gone'
          ? { do: 'retire', user: id, org, ...between }
          : { do: 'user', type: r.between, user: id, org, active: r.betweenActive, email: r.email, name: 'Between', ...between },
        { do: 'again', back: 1, earlier: true },
      ];
    }
    case 'tiedAgain': {
      // Two events of one time, the administrator's removal, a newer login (the record moves on),
      // then the first again: a redelivery of a tied time after the record moved past it.
      const id = user(r.user);
      const home = named('home', r.user % s.users);
      const one = (type: UserEventKind, active: boolean, t: number): Step => ({
        do: 'user',
        type,
        user: id,
        org: home,
        active,
        email: r.email,
        name: TIED,
        ...ev,
        t,
      });
      return [
        one(r.first, r.first === 'login', ev.t),
        one(r.second, r.second === 'activated', ev.t),
        { do: 'unmember', org: home!, user: id },
        one('login', true, ev.t + 1),
        { do: 'again', back: 2 },
      ];
    }
    case 'tiedGone': {
      // A creation, an administrator's change hung on it, a newer event and a deletion of the
      // creation's time, the deletion before or after the newer event.
      const newer = { ...ev, t: ev.t + 1, fmt: ev.fmt === UNTIMED ? 0 : ev.fmt };
      const at = { ...ev, fmt: ev.fmt === UNTIMED ? 0 : ev.fmt };
      const order = (deletion: Step, later: Step) => (r.lateDeletion ? [later, deletion] : [deletion, later]);
      if (r.course !== undefined) {
        const key = course(r.course);
        const home = named('home', r.course % s.courses);
        return [
          { do: 'course', course: key, org: home, name: TIED, ...at },
          { do: 'link', org: home!, course: key, g: r.g },
          ...order({ do: 'delete', course: key, ...at }, { do: 'course', course: key, org: home, name: 'Renamed', ...newer }),
        ];
      }
      const id = user(r.user);
      const home = named('home', r.user % s.users);
      return [
        { do: 'user', type: 'activated', user: id, org: home, active: true, email: r.email, name: TIED, ...at },
        { do: 'move', org: home!, user: id, g: r.g },
        ...order(
          { do: 'retire', user: id, org: home, ...at },
          { do: 'user', type: 'login', user: id, org: home, active: true, email: r.email, name: 'Later', ...newer },
        ),
      ];
    }
    case 'race': {
      // Registrations of one time on the learners' topic (a consumer applies them together: the
      // batch path) and an older activation of the first, matching no rule, on the activations' topic.
      const at = { ...ev, t: ev.t + 1, fmt: ev.fmt === UNTIMED ? 0 : ev.fmt };
      const registrations: Step[] = r.users.map((u: number) => ({
        do: 'user',
        type: 'registered',
        user: user(u),
        org: named('home', u % s.users),
        active: true,
        email: r.email,
        name: RACER,
        ...at,
      }));
      const first = r.users[0] as number;
      return [
        ...registrations,
        { do: 'user', type: 'activated', user: user(first), org: named('home', first % s.users), active: true, email: 'racer@mail.net', name: RACER, ...ev },
      ];
    }
    case 'lateRule': {
      // A learner activated while its domain has no rule, then the rule made and applied: the one
      // way a learner joins by application (drawn alone, an application mostly finds every
      // matching learner in a group already). Newer than the history so far, as a burst.
      const at = { ...ev, t: ev.t + 6, src: 0 as const };
      const home = named('home', r.user % s.users)!;
      return [
        { do: 'unrule', org: home, domain: r.domain },
        { do: 'user', type: 'activated', user: user(r.user), org: home, active: true, email: `late@${r.domain}`, name: 'Late', ...at },
        { do: 'rule', org: home, domain: r.domain, g: r.g },
        { do: 'apply', org: home, domain: r.domain },
      ];
    }
    case 'kill':
      return { do: 'kill', after: r.after };
    case 'flag':
      return { do: 'flag', org: org(r.org), on: r.on };
    case 'group':
      return { do: 'group', org: org(r.org) };
    case 'ungroup':
      return { do: 'ungroup', org: org(r.org), g: r.g };
    case 'rule':
      return { do: 'rule', org: org(r.org), domain: r.domain, g: r.g };
    case 'unrule':
      return { do: 'unrule', org: org(r.org), domain: r.domain };
    case 'apply':
      return { do: 'apply', org: org(r.org), domain: r.domain };
    case 'member':
      return { do: 'member', org: named(r.org, r.user % s.users)!, user: user(r.user), g: r.g };
    case 'unmember':
      return { do: 'unmember', org: named(r.org, r.user % s.users)!, user: user(r.user) };
    case 'move':
      return { do: 'move', org: named(r.org, r.user % s.users)!, user: user(r.user), g: r.g };
    case 'link':
      return { do: 'link', org: named(r.org, r.course % s.courses)!, course: course(r.course), g: r.g };
    case 'unlink':
      return { do: 'unlink', org: named(r.org, r.course % s.courses)!, course: course(r.course), g: r.g };
    default:
      return { do: 'public', org: named(r.org, r.course % s.courses)!, course: course(r.course), on: r.on };
  }
}

export interface History {
  users: number[];
  courses: string[];
  orgs: string[];
  steps: Step[];
}

/**
 * Histories of 2-3 organizations, 3-5 learners and 2-4 courses: a short setup (groups, rules,
 * flags), then up to `maxSteps` random steps with at least one SIGKILL of the consumer among them.
 */
export function historyArbitrary(maxSteps: number): fc.Arbitrary<History> {
  // Unbiased: fast-check's bias makes most of a few runs tiny; a run here costs seconds, so each
  // should be a full history (shrinking still goes down to a few steps).
  return fc
    .noBias(
      fc.record({
        sizes: fc.record({ orgs: fc.integer({ min: 2, max: 3 }), users: fc.integer({ min: 3, max: 5 }), courses: fc.integer({ min: 2, max: 4 }) }),
        setup: rawSetup,
        steps: fc.array(rawStep, { minLength: 3, maxLength: maxSteps, size: 'max' }),
        kill: fc.record({ at: fc.nat(), after: fc.nat(4) }),
      }),
    )
    .map(({ sizes, setup, steps, kill }) => {
      const start: Step[] = setup.slice(0, sizes.orgs).flatMap((o, i) => {
        const org = ORGS[i]!;
        return [
          ...Array.from({ length: o.groups }, () => ({ do: 'group', org }) as const),
          ...o.rules.map((domain, i) => ({ do: 'rule', org, domain, g: i }) as const),
          ...(o.flag ? [{ do: 'flag', org, on: true } as const] : []),
        ];
      });
      const main = steps.flatMap((r, i) => bind(r, sizes, i));
      main.splice(kill.at % (main.length + 1), 0, { do: 'kill', after: kill.after });
      return {
        orgs: ORGS.slice(0, sizes.orgs),
        users: USER_IDS.slice(0, sizes.users),
        courses: COURSE_KEYS.slice(0, sizes.courses),
        steps: [...start, ...main],
      };
    });
}

/** The instant of `t`, written in one of several RFC 3339 spellings. */
export function timeString(t: number, fmt: number): string {
  const ms = BASE_TIME + t * 1000;
  if (fmt === LEAP) {
    // One nanosecond before `t`: the leap second of the minute that ends at `t`, else nine nines.
    const second = new Date(ms - 1000).toISOString().slice(0, 19);
    return ms % 86_400_000 === 0 ? `${second.slice(0, 17)}60Z` : `${second}.999999999Z`;
  }
  const iso = new Date(ms).toISOString(); // 2026-03-01T10:00:05.000Z
  switch (fmt % 4) {
    case 0:
      return iso;
    case 1:
      return `${iso.slice(0, 19)}Z`;
    case 2:
      return `${iso.slice(0, 19)}.000000+00:00`;
    default:
      return `${new Date(ms + 2 * 3600_000).toISOString().slice(0, 19)}+02:00`;
  }
}

export const EVENT_TYPES: Record<ModelEvent['kind'], string> = {
  activated: TYPES.activated,
  registered: TYPES.registered,
  login: TYPES.login,
  updated: TYPES.updated,
  retired: TYPES.retired,
  catalog: TYPES.catalogChanged,
  courseDeleted: TYPES.courseDeleted,
};

export interface KafkaMessage {
  key: string;
  value: string;
  headers: Record<string, string>;
  /** Set for an event without `time` (its instant), and for a new record of an earlier event. */
  timestamp?: string;
}

/** The model's event and the CloudEvent message the LMS would send for an event step (`id` given). */
export function encode(step: EventStep, id: string): { event: ModelEvent; message: KafkaMessage } {
  const source = SOURCES[step.src];
  const base = { source, id, time: stepTime(step) };
  const org = (o: string | null) => (o === null ? {} : { organization: o });
  let event: ModelEvent;
  let data: unknown;
  let key: string;
  switch (step.do) {
    case 'user': {
      const user = { id: step.user, is_active: step.active, username: `learner${step.user}`, email: step.email, name: step.name };
      event = { ...base, kind: step.type, ...org(step.org), user };
      data = { user: { id: user.id, is_active: user.is_active, pii: { username: user.username, email: user.email, name: user.name } }, ...org(step.org) };
      key = String(step.user);
      break;
    }
    case 'retire':
      event = { ...base, kind: 'retired', ...org(step.org), userId: step.user };
      data = { user: { id: step.user }, ...org(step.org) };
      key = String(step.user);
      break;
    case 'course':
      event = { ...base, kind: 'catalog', ...org(step.org), key: step.course, name: step.name };
      data = { catalog_info: { course_key: step.course, name: step.name }, ...org(step.org) };
      key = step.course;
      break;
    default:
      event = { ...base, kind: 'courseDeleted', key: step.course };
      data = { course_key: step.course };
      key = step.course;
  }
  const type = EVENT_TYPES[event.kind];
  const untimed = step.fmt === UNTIMED;
  const time = untimed ? {} : { time: timeString(step.t, step.fmt) };
  const stamp = untimed ? { timestamp: String(BASE_TIME + step.t * 1000) } : {};
  const message: KafkaMessage = step.bin
    ? {
        key,
        value: JSON.stringify(data),
        headers: {
          ce_specversion: '1.0',
          ce_id: id,
          ce_source: source,
          ce_type: type,
          ...(untimed ? {} : { ce_time: time.time! }),
          'content-type': 'application/json',
        },
        ...stamp,
      }
    : {
        key,
        value: JSON.stringify({ specversion: '1.0', id, source, type, ...time, datacontenttype: 'application/json', data }),
        headers: { 'content-type': 'application/cloudevents+json' },
        ...stamp,
      };
  return { event, message };
}
