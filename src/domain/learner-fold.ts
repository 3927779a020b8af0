import { emailDomain } from './email-domain';
import { type EntryBase, type Fold, foldHistory, type History, type Place } from './record-history';

/**
 * A learner's state as one pure function of its history (docs/event-core.md "The fold"): every
 * path that applies a user event, a retirement or an administrator's membership change folds
 * through here.
 */

/** What a user event says of the learner; a flag it does not carry is absent. */
export interface LearnerFacts {
  username: string;
  email: string;
  name: string;
  is_active: boolean;
  is_staff?: boolean;
  is_site_admin?: boolean;
}

export type LearnerEntry = EntryBase &
  (
    | {
        kind: 'user';
        org: string;
        facts: LearnerFacts;
        /** The event's type can be an activation (account activated, registration, login; never an update). */
        capable: boolean;
        /**
         * The group of the rule its email's domain matched when it arrived, or null. The fold
         * applies, at a period's activation, what the period's first arrival matched (`prepare`).
         */
        rule: number | null;
      }
    | { kind: 'retired' }
    /**
     * An administrator's change of the membership in `org`: the group set, or null for a removal;
     * `auto`: one a rule made elsewhere (`cag import-config` brings it as it was); `move`: a
     * PATCH of the membership, which keeps who made it and where it began.
     */
    | { kind: 'admin'; org: string; group: number | null; auto?: true; move?: true }
    /**
     * A rule applied to existing learners (or one created while an activation arrived): the
     * learner joins its group, as the rule's doing, if they are active in `org` with no group.
     */
    | { kind: 'join'; org: string; group: number }
  );

type UserEntry = Extract<LearnerEntry, { kind: 'user' }>;

export interface LearnerRecord {
  org: string;
  username: string;
  email: string;
  name: string;
  is_active: boolean;
  is_staff: boolean;
  is_site_admin: boolean;
}

export interface LearnerMembership {
  group: number;
  by: 'rule' | 'admin';
  /** The entry that made it. */
  born: Place;
}

export interface LearnerState {
  /** null: never seen, or retired. */
  record: LearnerRecord | null;
  membership: LearnerMembership | null;
  /** Where the current incarnation (in the current organization) began. */
  since: Place | null;
  /** No activation yet since the incarnation began or the last deactivation. */
  periodOpen: boolean;
}

export const NO_LEARNER: LearnerState = { record: null, membership: null, since: null, periodOpen: true };

/** Group ids are never reused: a group that is not live was deleted, and names no group any more. */
export type IsLiveGroup = (group: number) => boolean;

function userStep(s: LearnerState, e: UserEntry, isLive: IsLiveGroup): LearnerState {
  const old = s.record;
  const fresh = old === null || old.org !== e.org;
  // A move keeps the platform-wide flag; site administration is of an organization and starts again.
  const is_staff = e.facts.is_staff ?? old?.is_staff ?? false;
  const is_site_admin = e.facts.is_site_admin ?? (fresh ? false : old.is_site_admin);
  const record: LearnerRecord = {
    org: e.org,
    username: e.facts.username,
    email: e.facts.email,
    name: e.facts.name,
    is_active: e.facts.is_active,
    is_staff,
    is_site_admin,
  };
  let { membership, since, periodOpen } = fresh ? { membership: null, since: { at: e.at, seq: e.seq }, periodOpen: true } : s;
  if (!e.facts.is_active) periodOpen = true;
  else if (e.capable && periodOpen) {
    // The period's one activation: its rule applies, once, and only to a learner with no group.
    periodOpen = false;
    if (!inGroup(membership, isLive) && e.rule !== null) membership = { group: e.rule, by: 'rule', born: { at: e.at, seq: e.seq } };
  }
  return { record, membership, since, periodOpen };
}

/**
 * Whether the learner is in a group that still exists. The walk makes and keeps a membership
 * whose group was deleted since, as it was made then (it is left out at the end, `foldLearner`):
 * a move after it still moves that membership, keeping who made it and where it began, as it did
 * when the move was made, while a rule or a join after it finds the learner in no group.
 */
const inGroup = (m: LearnerMembership | null, isLive: IsLiveGroup) => m !== null && isLive(m.group);

/**
 * The activation-capable events showing the learner active, by activation period (indices into
 * `entries`, in order). A period is what lies between two of the walk's openings (`userStep`: a
 * new incarnation, or an event showing the learner inactive); its first member is its activation.
 */
function periodsOf(entries: LearnerEntry[], start: LearnerState): number[][] {
  const periods: number[][] = [];
  let org: string | null = start.record?.org ?? null;
  let period: number[] = [];
  const close = () => {
    if (period.length > 0) periods.push(period);
    period = [];
  };
  entries.forEach((e, i) => {
    if (e.kind === 'retired') {
      close();
      org = null;
    } else if (e.kind === 'user') {
      if (org !== e.org || !e.facts.is_active) close();
      org = e.org;
      if (e.capable && e.facts.is_active) period.push(i);
    }
  });
  close();
  return periods;
}

/**
 * The rule a period's activation applies, given the members it has (SPEC §5: the period's rules
 * are applied once, when the service first sees the learner active in it). Its activation is its
 * oldest event in event time, but the service applied the period when its first event *arrived*,
 * with the rules of that moment: so the activation applies what the first of the period's events
 * with its email's domain to arrive matched. A rule created, changed or deleted (its group with
 * it) between two arrivals of one period then changes nothing, whichever arrived first. Only when
 * an event of another domain arrived first are the rules of that moment not known for this
 * domain (docs/event-core.md "Bounds").
 */
function periodRule(members: UserEntry[]): number | null {
  const domain = emailDomain(members[0]!.facts.email);
  return members.filter((e) => emailDomain(e.facts.email) === domain).reduce((a, e) => (e.seq < a.seq ? e : a)).rule;
}

const memberAt = (entries: LearnerEntry[], i: number) => entries[i] as UserEntry;

/** `prepare`: each period's activation says the period's rule. */
function periodRules(entries: LearnerEntry[], start: LearnerState): LearnerEntry[] {
  const out = [...entries];
  for (const period of periodsOf(entries, start)) {
    const activation = memberAt(entries, period[0]!);
    const rule = periodRule(period.map((i) => memberAt(entries, i)));
    if (rule !== activation.rule) out[period[0]!] = { ...activation, rule };
  }
  return out;
}

/**
 * `stableCut`: a period whose activation would be folded while members of it are kept may be
 * split by a deactivation arriving later between them, and the activation's part then has the
 * rule of its own first arrival. Unless every such part has the rule the whole has, the cut goes
 * back to the activation.
 */
function periodCut(entries: LearnerEntry[], start: LearnerState, cut: number): number {
  for (const period of periodsOf(entries, start)) {
    if (period[0]! >= cut || period.at(-1)! < cut) continue;
    const members = period.map((i) => memberAt(entries, i));
    const whole = periodRule(members);
    const folded = period.filter((i) => i < cut).length;
    for (let n = folded; n < members.length; n++) if (periodRule(members.slice(0, n)) !== whole) return period[0]!;
  }
  return cut;
}

/** The fold of a learner's entries; `isLive` tells which groups still exist. */
export function learnerFold(isLive: IsLiveGroup): Fold<LearnerEntry, LearnerState> {
  return {
    initial: NO_LEARNER,
    resets: (e) => e.kind === 'retired',
    prepare: periodRules,
    stableCut: periodCut,
    step(s, e) {
      switch (e.kind) {
        case 'user':
          return userStep(s, e, isLive);
        case 'retired':
          return NO_LEARNER;
        case 'admin':
          // Made in the organization that held the learner then: moved since (a late event), it concerns the learner no more.
          if (s.record?.org !== e.org) return s;
          if (e.group === null) return { ...s, membership: null };
          // A move keeps the membership (who made it, where it began); a creation begins one.
          if (e.move && s.membership) return { ...s, membership: { ...s.membership, group: e.group } };
          return { ...s, membership: { group: e.group, by: e.auto ? 'rule' : 'admin', born: { at: e.at, seq: e.seq } } };
        case 'join':
          if (s.record?.org !== e.org || !s.record.is_active || inGroup(s.membership, isLive)) return s;
          return { ...s, membership: { group: e.group, by: 'rule', born: { at: e.at, seq: e.seq } } };
      }
    },
  };
}

/** The learner's state: the fold of its history, with a membership whose group was deleted since left out. */
export function foldLearner(h: History<LearnerEntry, LearnerState>, isLive: IsLiveGroup): LearnerState {
  const s = foldHistory(h, learnerFold(isLive));
  return s.membership && !isLive(s.membership.group) ? { ...s, membership: null } : s;
}
