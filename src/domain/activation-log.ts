import type { LogEntry, MembershipDoc, UserDoc } from '../db/collections';
import { isLate, versionTime as timeOf, version } from '../db/versioned-writes';

export type { LogEntry };

/**
 * A learner's activations in event time (docs/events.md, "Activations"): what the user record
 * keeps so that the membership rules give the same membership whatever order the events arrive
 * in. Pure: the writes are users.ts's (the log) and membership-rules.ts's (the membership).
 *
 * The log holds, sorted by version, each activation (an activation-capable event showing the
 * learner active) and each deactivation (any user event showing them inactive) the record saw,
 * applied or stale. A deactivation starts a period; a period's first activation is the one that
 * applies the rules. A removal (a retirement or a move older than the record, or the deletion a
 * new record follows) deletes the membership that began before it, and the log before it.
 */

/** The user fields this module reads and writes. */
export type ActivationState = Pick<UserDoc, 'act_log' | 'log_n' | 'removed_v' | 'removed_i' | 'admin_v' | 'floor_v' | 'floor_open'>;

/**
 * How many entries the log keeps. Older ones fold into the floor (`floor_v`, `floor_open`): the
 * membership as of the floor stands, and an event older than it adds nothing (docs/events.md
 * states the bound: an event arriving after 64 newer activations and deactivations of its learner,
 * repeats apart).
 */
export const LOG_LIMIT = 64;

/**
 * The entry user event `id` adds at version `v`, or null (an update showing the learner active).
 * `untimed`: the event has no `time`, so its entry may move (`withEntryMoved`).
 */
export function logEntry(facts: { is_active: boolean; email: string }, activates: boolean, v: string, id: string, untimed = false): LogEntry | null {
  const u = untimed ? { u: true as const } : {};
  if (activates) return { v, k: 'a', e: facts.email, i: [id], ...u };
  return facts.is_active ? null : { v, k: 'd', i: [id], ...u };
}

/** Whether the log already has an entry of one of `entry`'s events: a redelivery, whatever version it comes with now. */
const logged = (log: readonly LogEntry[], entry: LogEntry) => entry.i !== undefined && log.some((e) => e.i?.some((id) => entry.i!.includes(id)));

/** Whether the log's floor covers `entry`: older, or (a late entry) of the floor's time, whose events the fold forgot. */
const underFloor = (state: ActivationState, entry: LogEntry) =>
  state.floor_v !== undefined && (isLate(entry.v) ? timeOf(entry.v) <= timeOf(state.floor_v) : entry.v <= state.floor_v);

/**
 * The log fields once `entry` is added in event time, or null when it adds nothing: it is older
 * than the last removal, under the floor, or an event that removal took (`removed_i`: a late
 * entry of the removal's time comes after it, but not when it is one the removal came after).
 */
export function withEntry(state: ActivationState, entry: LogEntry): Partial<ActivationState> | null {
  if ((state.removed_v !== undefined && entry.v < state.removed_v) || underFloor(state, entry)) return null;
  if (entry.i?.some((id) => state.removed_i?.includes(id))) return null;
  const log = state.act_log ?? [];
  // An event the log has is a redelivery, whatever the record's state: its entry stays where it
  // was placed (a copy placed again would follow the entries of its time that arrived later). An
  // entry written before identities were kept: a stale event delivered again has the same
  // kind and version, or comes late where that entry had `time#0`.
  const legacy = (e: LogEntry) => e.i === undefined && e.k === entry.k && (e.v === entry.v || e.v === version(timeOf(entry.v), 0));
  if (logged(log, entry) || log.some(legacy)) return null;
  // After every entry of its time: a late event (`time#~n`) arrived after those (among equal
  // times arrival decides), and an applied one is the newest.
  const at = log.findIndex((e) => timeOf(e.v) > timeOf(entry.v));
  return folded({ ...state, act_log: at < 0 ? [...log, entry] : [...log.slice(0, at), entry, ...log.slice(at)] });
}

/**
 * The log fields once the entry of event `id` is placed again at version `v` (an event without
 * `time` whose earliest Kafka timestamp moved back: src/db/event-times.ts), or null when no
 * entry names it. The entry it shared with repeats keeps theirs; one older than the floor or the
 * last removal is gone, as it would have added nothing there.
 */
export function withEntryMoved(state: ActivationState, id: string, v: string): Partial<ActivationState> | null {
  const log = state.act_log ?? [];
  const at = log.findIndex((e) => e.i?.includes(id));
  if (at < 0 || log[at]!.v === v) return null;
  const { i, ...entry } = log[at]!;
  const others = i!.filter((x) => x !== id);
  const rest = [...log.slice(0, at), ...(others.length > 0 ? [{ ...entry, i: others }] : []), ...log.slice(at + 1)];
  return withEntry({ ...state, act_log: rest }, { ...entry, v, i: [id] }) ?? { act_log: rest };
}

/**
 * The log fields once the record is at version `v` again (an event without `time` moved back
 * below the events it had refused, and the newest of them is the record's again:
 * versioned-records.ts `replaceEarlier`), or null when nothing changes. Its late entries and
 * removal of `v`'s time were late against a newer record; now they are the record's own, at its
 * version, so what follows of that time comes after them and a deletion of the record takes
 * what they made.
 */
export function withRecordAt(state: ActivationState, v: string): Partial<ActivationState> | null {
  const time = timeOf(v);
  const own = (x: string | undefined) => x !== undefined && isLate(x) && timeOf(x) === time;
  const log = state.act_log ?? [];
  if (!log.some((e) => own(e.v)) && !own(state.removed_v)) return null;
  return { act_log: log.map((e) => (own(e.v) ? { ...e, v } : e)), ...(own(state.removed_v) ? { removed_v: v } : {}) };
}

/**
 * The log fields once a removal at version `v` (by event `id`) is recorded, or null when a newer
 * one is, or when it is recorded already. The identities of the events of its time it comes
 * after stay named (`removed_i`, its own and those of the entries it takes, with an earlier
 * removal's of that time): a redelivery of one, late, would otherwise follow the removal.
 */
export function withRemoval(state: ActivationState, v: string, id?: string): Partial<ActivationState> | null {
  if (state.removed_v !== undefined && v <= state.removed_v) return null;
  const time = timeOf(v);
  const earlier = state.removed_v !== undefined && timeOf(state.removed_v) === time ? (state.removed_i ?? []) : [];
  if (id !== undefined && earlier.includes(id)) return null;
  const all = state.act_log ?? [];
  const log = all.filter((e) => e.v >= v);
  const taken = all.filter((e) => e.v < v && timeOf(e.v) === time).flatMap((e) => e.i ?? []);
  const removed_i = [...new Set([...earlier, ...taken, ...(id === undefined ? [] : [id])])];
  // A floor older than the removal says nothing any more: what came before the removal is gone.
  const floor = state.floor_v !== undefined && state.floor_v > v ? {} : { floor_v: undefined, floor_open: undefined };
  return { removed_v: v, removed_i: removed_i.length > 0 ? removed_i : undefined, act_log: log, ...floor };
}

/**
 * The log without repeats, with its oldest entries beyond LOG_LIMIT folded into the floor. A
 * repeat is an entry of the same kind and time as the one before it: an entry of that time
 * arriving later goes after both, so nothing can ever come between them, and the second changes
 * no period (a burst of events of one time keeps one entry).
 */
export function folded(state: ActivationState): Partial<ActivationState> {
  const log: LogEntry[] = [];
  for (const e of state.act_log ?? []) {
    const last = log.at(-1);
    // An entry that may move (its event has no `time`) takes no repeat: moved, it would leave the
    // repeat with its version, email and group, not the repeat's own.
    if (!last || last.k !== e.k || timeOf(last.v) !== timeOf(e.v) || last.u || e.u) log.push(e);
    // The repeat's identities stay named, so its redelivery is still recognised.
    else if (e.i) log[log.length - 1] = { ...last, i: [...new Set([...(last.i ?? []), ...e.i])] };
  }
  if (log.length <= LOG_LIMIT) return { act_log: log };
  const cut = log.length - LOG_LIMIT;
  // Open: the floor's period has its activation already (the last folded entry is one).
  return { act_log: log.slice(cut), floor_v: log[cut - 1]!.v, floor_open: log[cut - 1]!.k === 'a' };
}

/** Activations whose rules are not read yet (their email, not their group). */
export const unmatched = (state: ActivationState) => (state.act_log ?? []).filter((e) => e.k === 'a' && e.e !== undefined);

/** Where the rules stop reaching back: the administrator's last change, or the floor (the newer). */
function base(state: ActivationState): string | undefined {
  const { admin_v: admin, floor_v: floor } = state;
  return admin === undefined ? floor : floor === undefined || admin > floor ? admin : floor;
}

/**
 * The activation whose rule owns the membership in event time: the first period activation newer
 * than the base whose rule named a group. Null: none (the membership is the base's).
 */
export function ruleTarget(state: ActivationState): { v: string; g: number } | null {
  const from = base(state);
  let open = state.floor_open ?? false;
  for (const e of state.act_log ?? []) {
    // Before the last removal: gone with it (withRemoval). Only an event applied while the
    // record stood below its removal (placed back by an event without time, its kept events
    // applied again) writes one there, and the membership it would make the removal deletes.
    if (state.removed_v !== undefined && e.v < state.removed_v) continue;
    if (e.k === 'd') open = false;
    else if (!open) {
      open = true;
      if ((from === undefined || e.v > from) && e.g !== undefined) return { v: e.v, g: e.g };
    }
  }
  return null;
}

/** Whether the membership reflects the log as it stands (`settled_n` is `log_n`). */
export const isSettled = (user: Pick<UserDoc, 'log_n' | 'settled_n'>) => (user.settled_n ?? 0) === (user.log_n ?? 0);

export type MembershipPlan = { do: 'keep' } | { do: 'delete' } | { do: 'set'; v: string; g: number };

/**
 * What the membership `m` must become for the log (docs/events.md): one begun before the last
 * removal goes; one an administrator made or moved (no `rule_v`), or that the base covers,
 * stands; any other is the rule target's, or none.
 */
export function membershipPlan(state: ActivationState, m: Pick<MembershipDoc, 'rule_v' | 'born_v'> | null): MembershipPlan {
  if (m && m.born_v !== undefined && state.removed_v !== undefined && m.born_v < state.removed_v) return { do: 'delete' };
  const from = base(state);
  if (m && (m.rule_v === undefined || (from !== undefined && m.rule_v <= from))) return { do: 'keep' };
  const target = ruleTarget(state);
  if (!target) return m ? { do: 'delete' } : { do: 'keep' };
  return m?.rule_v === target.v ? { do: 'keep' } : { do: 'set', ...target };
}
