/**
 * src/domain/activation-log.ts: the membership a learner's activation log asks for (docs/events.md,
 * "Activations"), whatever order its entries were added in.
 */
import type { LogEntry } from '../../src/db/collections';
import { lateVersion } from '../../src/db/versioned-writes';
import { type ActivationState, LOG_LIMIT, logEntry, membershipPlan, ruleTarget, withEntry, withEntryMoved, withRemoval } from '../../src/domain/activation-log';

const v = (t: number, n = 1) => `2026-01-${String(t).padStart(2, '0')}T00:00:00.000Z#${String(n).padStart(4, '0')}`;
const act = (t: number, g?: number, n = 1): LogEntry => ({ v: v(t, n), k: 'a', ...(g === undefined ? {} : { g }) });
const deact = (t: number, n = 1): LogEntry => ({ v: v(t, n), k: 'd' });

/** The state after adding `entries` in the order given. */
function added(entries: LogEntry[], start: ActivationState = {}): ActivationState {
  let state = start;
  for (const e of entries) state = { ...state, ...(withEntry(state, e) ?? {}) };
  return state;
}

/** Every order of `xs`. */
const orders = <T>(xs: T[]): T[][] =>
  xs.length <= 1 ? [xs] : xs.flatMap((x, i) => orders([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));

test('an entry goes in event time; a stale one delivered again (same version and kind) adds nothing', () => {
  const s = added([act(5), deact(3), act(4)]);
  expect(s.act_log!.map((e) => e.v)).toEqual([v(3), v(4), v(5)]);
  expect(withEntry(s, deact(3))).toBeNull();
});

test("each period's first activation is the one whose rule counts, whatever the arrival order", () => {
  // Periods: [a1 (none), a2 (g7)] | d3 | [a4 (g8), a5 (g9)]: a1 is the first period's, and names no group; a4 the second's.
  const entries = [act(1), act(2, 7), deact(3), act(4, 8), act(5, 9)];
  for (const order of orders(entries)) expect(ruleTarget(added(order))).toEqual({ v: v(4), g: 8 });
  // An activation between two deactivations, arriving last: the first of its period.
  expect(ruleTarget(added([deact(1), deact(5), act(9, 2), act(3, 6)]))).toEqual({ v: v(3), g: 6 });
});

test("an administrator's change stands against the activations before it; a later period's activation applies", () => {
  const s = added([act(1, 7), deact(3), act(4, 8)], { admin_v: v(2) });
  expect(ruleTarget(s)).toEqual({ v: v(4), g: 8 });
  expect(membershipPlan(s, { born_v: v(2) })).toEqual({ do: 'keep' }); // the administrator's own
  expect(ruleTarget(added([act(1, 7), act(4, 8)], { admin_v: v(2) }))).toBeNull(); // same period: a4 is no first
});

test('a removal deletes the membership begun before it, and the activations before it no longer count', () => {
  const s = added([act(1, 7), deact(3), act(6, 8)]);
  const removed = { ...s, ...withRemoval(s, v(5, 0)) };
  expect(removed.act_log!.map((e) => e.v)).toEqual([v(6)]);
  expect(membershipPlan(removed, { rule_v: v(1), born_v: v(1) })).toEqual({ do: 'delete' });
  expect(membershipPlan(removed, null)).toEqual({ do: 'set', v: v(6), g: 8 });
  expect(withEntry(removed, act(2, 9))).toBeNull(); // older than the removal
  expect(withRemoval(removed, v(4, 0))).toBeNull(); // an older removal says nothing new
});

test("a rule's membership follows the target: moved to an earlier activation's group, deleted when none names one", () => {
  const s = added([act(4, 8), act(2, 7)]);
  expect(membershipPlan(s, { rule_v: v(4), born_v: v(4) })).toEqual({ do: 'set', v: v(2), g: 7 });
  expect(membershipPlan(added([act(4, 8), act(2)]), { rule_v: v(4), born_v: v(4) })).toEqual({ do: 'delete' });
  expect(membershipPlan(s, { rule_v: v(2), born_v: v(2) })).toEqual({ do: 'keep' });
  expect(membershipPlan(s, { born_v: v(1) })).toEqual({ do: 'keep' }); // no rule_v: an administrator's
});

test(`the log keeps ${LOG_LIMIT} entries; older ones fold into the floor, which stands like an administrator's change`, () => {
  const many = Array.from({ length: LOG_LIMIT + 2 }, (_, i) => (i % 2 === 0 ? act(i + 1, i + 1) : deact(i + 1)));
  const s = added(many);
  expect(s.act_log).toHaveLength(LOG_LIMIT);
  expect(s.floor_v).toBe(v(2));
  expect(s.floor_open).toBe(false); // the last folded entry is a deactivation
  expect(withEntry(s, act(1, 5, 0))).toBeNull(); // older than the floor
  expect(ruleTarget(s)).toEqual({ v: v(3), g: 3 });
  expect(membershipPlan(s, { rule_v: v(1), born_v: v(1) })).toEqual({ do: 'keep' });
});

test('a burst of one time keeps one entry of each run: nothing can come between its entries, so the rest change no period', () => {
  const burst = [act(5, 7, 1), act(5, 8, 2), deact(5, 3), deact(5, 4), deact(5, 5)];
  const s = added([...burst, act(3, 9)]);
  expect(s.act_log).toEqual([act(3, 9), act(5, 7, 1), deact(5, 3)]);
  // A stale event of that time (`time#0`) goes after all of them, and repeats the last: nothing added.
  expect(added([deact(5, 0)], s).act_log).toEqual(s.act_log);
  expect(ruleTarget(s)).toEqual({ v: v(3), g: 9 });
});

test('the entry an event adds names the event', () => {
  expect(logEntry({ is_active: true, email: 'a@x.org' }, true, v(1), 'e1')).toEqual({ v: v(1), k: 'a', e: 'a@x.org', i: ['e1'] });
  expect(logEntry({ is_active: false, email: 'a@x.org' }, false, v(1), 'e1')).toEqual({ v: v(1), k: 'd', i: ['e1'] });
  expect(logEntry({ is_active: true, email: 'a@x.org' }, false, v(1), 'e1')).toBeNull(); // an update showing the learner active
});

// Issue 38, item 1: a redelivery is recognised by its identity whatever version it comes with
// (applied `time#n` the first time, stale `time#0` once the record moved past its time).
test('a redelivery of an event of a tied time, after the record moved on, adds nothing: the entries of its time keep their order', () => {
  const named = (e: LogEntry, id: string): LogEntry => ({ ...e, i: [id] });
  // A registration (inactive) and an activation of one time, then a later login of the same period.
  const s = added([named(deact(5, 1), 'reg'), named(act(5, 7, 2), 'act'), named(act(6, 7), 'login')]);
  expect(ruleTarget(s)).toEqual({ v: v(5, 2), g: 7 });
  // The registration again: stale now (`time#0`), it would go after the activation of its time and
  // make the login the first activation of a new period.
  expect(withEntry(s, named(deact(5, 0), 'reg'))).toBeNull();
  // Another event of that time, arriving now, does go after them (the tie rule: arrival order).
  expect(withEntry(s, named(deact(5, 0), 'other'))?.act_log?.map((e) => e.i)).toEqual([['reg'], ['act'], ['other'], ['login']]);
});

test('a repeat folded into the entry before it keeps its identity named', () => {
  const s = added([
    { ...deact(5, 1), i: ['d1'] },
    { ...deact(5, 2), i: ['d2'] },
    { ...act(5, 7, 3), i: ['a3'] },
  ]);
  expect(s.act_log!.map((e) => e.i)).toEqual([['d1', 'd2'], ['a3']]);
  expect(withEntry(s, { ...deact(5, 0), i: ['d2'] })).toBeNull();
});

test('a late entry goes after every entry and removal of its time that came before it, in arrival order', () => {
  const late = (t: number, n: number) => lateVersion(v(t).slice(0, -5), n);
  // A move of time 5 applied (the record it left behind: removed at 5#1), then a login of time 5
  // arriving after the record moved past 5: it comes after the move, so it counts.
  const moved: ActivationState = { removed_v: v(5, 1), act_log: [{ v: v(13), k: 'a', g: 1, i: ['newer'] }] };
  const s = added([{ v: late(5, 2), k: 'a', g: 2, i: ['login'] }], moved);
  expect(s.act_log!.map((e) => e.i)).toEqual([['login'], ['newer']]);
  expect(ruleTarget(s)).toEqual({ v: late(5, 2), g: 2 });
  // Two late entries of one time: in the order they arrived.
  const two = added(
    [
      { v: late(3, 7), k: 'd', i: ['d'] },
      { v: late(3, 8), k: 'a', g: 4, i: ['a'] },
    ],
    { act_log: [{ v: v(9), k: 'a', i: ['x'] }] },
  );
  expect(two.act_log!.map((e) => e.k)).toEqual(['d', 'a', 'a']);
});

test('a late removal names what it came after: a redelivery of the entry it took, or of the removal, changes nothing', () => {
  const late = (t: number, n: number) => lateVersion(v(t).slice(0, -5), n);
  const login = { v: late(10, 1), k: 'a' as const, g: 3, i: ['login'] };
  let s = added([login], { act_log: [] });
  s = { ...s, ...withRemoval(s, late(10, 2), 'retirement')! };
  expect(s.act_log).toEqual([]);
  expect(s.removed_i).toEqual(['login', 'retirement']);
  expect(withEntry(s, { ...login, v: late(10, 3) })).toBeNull();
  const registration = { v: late(10, 4), k: 'a' as const, g: 3, i: ['registration'] };
  s = added([registration], s);
  expect(ruleTarget(s)).toEqual({ v: late(10, 4), g: 3 });
  expect(withRemoval(s, late(10, 5), 'retirement')).toBeNull();
  // A removal of a newer time forgets the names: its time alone refuses what came before.
  expect(withRemoval(s, v(11), 'move')).toMatchObject({ removed_v: v(11), removed_i: ['move'] });
});

test("an entry of an event without time takes no repeat: moved back below a removal, it leaves the repeat with the repeat's own version and email", () => {
  const untimed = logEntry({ is_active: true, email: 'twin@uni.edu' }, true, v(12, 1), 'twin', true)!;
  const timed = logEntry({ is_active: true, email: 'racer@corp.com' }, true, v(12, 2), 'racer')!;
  const state = added([untimed, timed], { removed_v: v(11), removed_i: ['retirement'] });
  expect(state.act_log).toEqual([untimed, timed]);
  // The untimed event's earlier record places it at 10, below the removal of 11: it adds nothing there.
  const moved = { ...state, ...withEntryMoved(state, 'twin', lateVersion(v(10).slice(0, -5), state.log_n ?? 0)) };
  expect(moved.act_log).toEqual([timed]);
  expect(ruleTarget({ ...moved, act_log: [{ ...timed, g: 2 }] })).toEqual({ v: v(12, 2), g: 2 });
  // A timed repeat still folds into the timed entry before it.
  expect(added([timed, { ...timed, v: v(12, 3), i: ['again'] }]).act_log).toEqual([{ ...timed, i: ['racer', 'again'] }]);
});

test('an entry below the last removal (applied while the record stood below it) asks for no membership: the plan settles', () => {
  const state: ActivationState = { act_log: [{ ...act(3, 7), i: ['login'] }], removed_v: v(4, 2) };
  expect(ruleTarget(state)).toBeNull();
  expect(membershipPlan(state, null)).toEqual({ do: 'keep' });
  expect(membershipPlan(state, { rule_v: v(3), born_v: v(3) })).toEqual({ do: 'delete' });
  // An activation after the removal is the period's first again.
  expect(ruleTarget({ ...state, act_log: [...state.act_log!, act(5, 8)] })).toEqual({ v: v(5), g: 8 });
});
