import { emailDomain } from './email-domain';
import { type EntryBase, type Fold, foldHistory, type History, type Place, placeOrder } from './record-history';

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
        /** The groups the history named that were deleted when it arrived (`Gone`). */
        gone?: number[];
      }
    | { kind: 'retired' }
    /**
     * An administrator's change of the membership in `org`: the group set, or null for a removal;
     * `auto`: one a rule made elsewhere (`cag import-config` brings it as it was); `moved`: a
     * PATCH, which keeps the membership it moved as the administrator saw it (who made it, where
     * it began). `move` without `moved`: such a PATCH stored before PATCHes said what they moved.
     */
    | { kind: 'admin'; org: string; group: number | null; auto?: true; moved?: Moved; move?: true }
    /**
     * A rule applied to existing learners (or one created while an activation arrived): the
     * learner joins its group, as the rule's doing, if they are active in `org` with no group.
     */
    | { kind: 'join'; org: string; group: number; gone?: number[] }
  );

type UserEntry = Extract<LearnerEntry, { kind: 'user' }>;

/** What a PATCH moved: who made the membership, and where it began. */
export type Moved = Pick<LearnerMembership, 'by' | 'born'>;

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
    if (!inGroup(membership, e, isLive) && e.rule !== null) membership = { group: e.rule, by: 'rule', born: { at: e.at, seq: e.seq } };
  }
  return { record, membership, since, periodOpen };
}

/**
 * Whether the learner was in a group when entry `e` (an activation, a join) arrived: a group is
 * deleted at an instant of no learner's history, so what counts is what the service knew then,
 * which the entry carries (`gone`: the groups the history named that were already deleted). An
 * activation that arrived while the learner was in a group made nothing, and the group's
 * deletion later does not make it apply its rule; one that arrived after finds the learner in no
 * group. An entry stored before entries said (`gone` absent) asks whether the group exists now.
 * The walk makes and keeps a membership whose group was deleted since, as it was made then (it
 * is left out at the end, `foldLearner`): a move after it still moves that membership, keeping
 * who made it and where it began, as it did when the move was made.
 */
const inGroup = (m: LearnerMembership | null, e: { gone?: number[] }, isLive: IsLiveGroup) =>
  m !== null && (e.gone ? !e.gone.includes(m.group) : isLive(m.group));

/**
 * The activation-capable events showing the learner active, by activation period (indices into
 * `entries`, in order). A period is what lies between two of the walk's openings (`userStep`: a
 * new incarnation, or an event showing the learner inactive); its first member is its activation,
 * but for a period `continued` from the floor (its activation was folded there).
 */
interface Period {
  members: number[];
  continued: boolean;
}

function periodsOf(entries: LearnerEntry[], start: LearnerState): Period[] {
  const periods: Period[] = [];
  let org: string | null = start.record?.org ?? null;
  let continued = start.record !== null && !start.periodOpen;
  let members: number[] = [];
  const close = () => {
    if (members.length > 0) periods.push({ members, continued });
    members = [];
    continued = false;
  };
  entries.forEach((e, i) => {
    if (e.kind === 'retired') {
      close();
      org = null;
    } else if (e.kind === 'user') {
      if (org !== e.org || !e.facts.is_active) close();
      org = e.org;
      if (e.capable && e.facts.is_active) members.push(i);
    }
  });
  close();
  return periods;
}

const memberAt = (entries: LearnerEntry[], i: number) => entries[i] as UserEntry;
const domainOf = (e: UserEntry) => emailDomain(e.facts.email);

/**
 * The member whose arrival decided a period's activation (SPEC §5: the period's rules are applied
 * once, when the service first sees the learner active in it), for each prefix of its members:
 * `deciders[n - 1]` for the first n. The activation is the oldest member in event time, but the
 * service applied the period when its first member *arrived*, with the rules and groups of that
 * moment: so the activation applies what the first of the members with its email's domain to
 * arrive matched, and finds the learner in a group or not as that member did (`inGroup`). A rule
 * created, changed or deleted (its group with it) between two arrivals of one period then changes
 * nothing, whichever arrived first. Only when a member of another domain arrived first are the
 * rules of that moment not known for this domain (docs/event-core.md "Bounds").
 */
function prefixDeciders(members: UserEntry[]): UserEntry[] {
  const domain = domainOf(members[0]!);
  const deciders: UserEntry[] = [];
  let first: UserEntry | null = null;
  for (const e of members) {
    if (domainOf(e) === domain && (first === null || e.seq < first.seq)) first = e;
    deciders.push(first!);
  }
  return deciders;
}

/** What an arrival decided with: the rule it matched and the groups gone then, as one comparable value. */
const decision = (e: UserEntry) => JSON.stringify([e.rule, e.gone ?? null]);

/** `prepare`: each period's activation says what the period's decider matched and found gone. */
function periodRules(entries: LearnerEntry[], start: LearnerState): LearnerEntry[] {
  const out = [...entries];
  for (const { members, continued } of periodsOf(entries, start)) {
    if (continued) continue;
    const activation = memberAt(entries, members[0]!);
    const decider = prefixDeciders(members.map((i) => memberAt(entries, i))).at(-1)!;
    if (decider !== activation) out[members[0]!] = { ...activation, rule: decider.rule, gone: decider.gone };
  }
  return out;
}

/**
 * `stableCut`. Folding a period's activation fixes its rule, while what stays above the floor
 * can still change which members the period has: a deactivation (or move, or retirement)
 * arriving later between them splits it, leaving the activation the members before the split;
 * an event without `time` kept may move earlier, into it. A cut is stable when no such change can
 * give the folded activation another rule: every prefix of the members that keeps those folded
 * has the whole's decider's rule and groups gone (`decision`), and, while an event without `time` is kept, every member kept (in this
 * period or a later one) of the activation's domain matched the same. A period continued from the
 * floor was stable when its activation was folded (members arriving since come last, and never
 * decide). Otherwise the cut goes back to before the activation, or, when that keeps more than
 * `maxKept`, forward to the first stable cut (everything, at worst: an event then arriving below
 * the floor is stale, the bound's divergence).
 */
function periodCut(entries: LearnerEntry[], start: LearnerState, cut: number, maxKept: number): number {
  const periods = periodsOf(entries, start).map((p) => {
    const members = p.members.map((i) => memberAt(entries, i));
    const decisions = prefixDeciders(members).map(decision);
    return { continued: p.continued, members, at: p.members, decisions, decision: decisions.at(-1), domain: domainOf(members[0]!) };
  });
  // untimedFrom[i]: whether an entry at i or later has no `time`.
  const untimedFrom: boolean[] = new Array(entries.length + 1).fill(false);
  for (let i = entries.length - 1; i >= 0; i--) untimedFrom[i] = untimedFrom[i + 1]! || !entries[i]!.timed;
  // The last period whose activation is below `c`.
  const below = (c: number) => {
    let last: (typeof periods)[number] | undefined;
    for (const q of periods) if (q.at[0]! < c) last = q;
    return last;
  };
  const stable = (c: number) => {
    const p = below(c);
    if (!p || p.continued) return true;
    const folded = p.at.filter((i) => i < c).length;
    for (let n = folded; n < p.members.length; n++) if (p.decisions[n - 1] !== p.decision) return false;
    if (!untimedFrom[c]) return true;
    return periods.every((q) => q.members.every((e, k) => q.at[k]! < c || domainOf(e) !== p.domain || decision(e) === p.decision));
  };
  if (stable(cut)) return cut;
  let back = cut;
  while (back > 0 && !stable(back)) back = below(back)!.at[0]!;
  if (entries.length - back <= maxKept) return back;
  let forward = cut;
  while (forward < entries.length && !stable(forward)) forward++;
  return forward;
}

/**
 * The membership an administrator's change makes. A creation begins one here. A move keeps the
 * membership the administrator moved, as they saw it: an older event arriving later, folded
 * before the move, changes nothing of what the move made (SPEC §5: their later change stands),
 * even where it re-makes the membership the move found (a rule's, say, once the group it was in
 * is deleted). Moved from an incarnation that ended before the move (a retirement or a move away
 * arriving late), it begins at the move, as a membership the move made would.
 */
function adminMade(s: LearnerState, e: Extract<LearnerEntry, { kind: 'admin' }>): LearnerMembership {
  const here = { at: e.at, seq: e.seq };
  const moved = e.moved ?? (e.move ? s.membership : null);
  if (!moved) return { group: e.group!, by: e.auto ? 'rule' : 'admin', born: here };
  return { group: e.group!, by: moved.by, born: s.since && placeOrder(moved.born, s.since) < 0 ? here : moved.born };
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
          return { ...s, membership: adminMade(s, e) };
        case 'join':
          if (s.record?.org !== e.org || !s.record.is_active || inGroup(s.membership, e, isLive)) return s;
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
