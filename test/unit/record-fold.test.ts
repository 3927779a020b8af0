// The event core's one definition (docs/event-core.md): a record's state is a pure fold of the
// set of its entries, ordered by instant then first arrival. Proven by permutation (fast-check,
// seeded, shrinking), and against the reference model written apart from src/
// (test/helpers/event-model.ts), so the fold is never checked against itself.
import fc from 'fast-check';
import { type CourseEntry, foldCourse, type NO_COURSE } from '../../src/domain/course-fold';
import { foldLearner, type LearnerEntry, type LearnerState, learnerFold } from '../../src/domain/learner-fold';
import {
  type Arriving,
  arrive,
  compact,
  emptyHistory,
  foldHistory,
  HISTORY_BOUNDS,
  type History,
  holdsChild,
  identityKey,
  placeNow,
  placeOrder,
} from '../../src/domain/record-history';
import { EventModel, type ModelEvent } from '../helpers/event-model';

const SEED = Number(process.env.FOLD_SEED ?? 4471);
const RUNS = Number(process.env.FOLD_RUNS ?? 400);
const options = { seed: SEED, numRuns: RUNS };

/** Second `s` of a fixed minute, as event-time.ts normalizes it: equal numbers are equal instants. */
const instant = (s: number) => `2026-01-01T00:${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}.000000000Z`;

type Learner = History<LearnerEntry, LearnerState>;
type Incoming = Arriving<LearnerEntry>;
const allLive = () => true;

/** The observable part of a learner's state (what lists, decisions and the membership show). */
const seen = (s: LearnerState) => ({ record: s.record, group: s.membership?.group ?? null });

const deliverAll = (messages: Incoming[]): Learner => messages.reduce<Learner>((h, m) => arrive(h, m).history, emptyHistory());

// ---- generators: one learner's events -------------------------------------------------------

const facts = fc.record({
  username: fc.constantFrom('ann', 'bo'),
  email: fc.constantFrom('ann@a.org', 'ann@b.org', 'x@c.org'),
  name: fc.constantFrom('Ann', 'Bo'),
  is_active: fc.boolean(),
  is_staff: fc.option(fc.boolean(), { nil: undefined }),
  is_site_admin: fc.option(fc.boolean(), { nil: undefined }),
});
/** The rules while the events arrive: one group per domain (a rule changed between arrivals is a case of its own, below). */
const RULES: Record<string, number | null> = { 'a.org': 1, 'b.org': 2, 'c.org': null };
const userEntry = fc
  .record({ kind: fc.constant('user' as const), org: fc.constantFrom('A', 'B'), facts, capable: fc.boolean() })
  .map((e) => ({ ...e, rule: RULES[e.facts.email.split('@')[1]!]! }));
const body = fc.oneof(
  { weight: 6, arbitrary: userEntry },
  { weight: 1, arbitrary: fc.constant({ kind: 'retired' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('admin' as const), org: fc.constantFrom('A', 'B'), group: fc.constantFrom(null, 1, 2, 3) }),
  },
);

/** Distinct events: an identity, an instant (few, so ties are common), and for events without `time` several Kafka timestamps. */
const events = fc
  .array(fc.record({ body, second: fc.integer({ min: 0, max: 6 }), timed: fc.boolean(), later: fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 2 }) }), {
    minLength: 1,
    maxLength: 10,
  })
  .map((list) => list.map((e, i) => ({ ...e, id: `e${i}`, stamps: e.timed ? [e.second] : [e.second, ...e.later] })));
type Event = typeof events extends fc.Arbitrary<(infer T)[]> ? T : never;

const message = (e: Event, stamp: number): Incoming => ({ ...e.body, source: 'lms', id: e.id, at: instant(stamp), timed: e.timed }) as Incoming;

/** Every Kafka record of every event, each event's records in a random order, all interleaved at random. */
const arrivals = events.chain((list) =>
  fc
    .shuffledSubarray(
      list.flatMap((e) => e.stamps.map((stamp, k) => ({ e, stamp, k }))),
      { minLength: list.reduce((n, e) => n + e.stamps.length, 0) },
    )
    .map((order) => ({ list, order: order.map(({ e, stamp }) => message(e, stamp)) })),
);

/** The reference order: the distinct events, each at its earliest stamp, then by first arrival. */
function referenceOrder(order: Incoming[]): LearnerEntry[] {
  const byId = new Map<string, LearnerEntry>();
  order.forEach((m, i) => {
    const known = byId.get(m.id);
    if (!known) byId.set(m.id, { ...m, seq: i } as LearnerEntry);
    else if (m.at < known.at) known.at = m.at;
  });
  return [...byId.values()].sort((a, b) => (a.at === b.at ? a.seq - b.seq : a.at < b.at ? -1 : 1));
}

describe('a record history', () => {
  test('folds to the fold of its distinct events, each at its earliest time, ties in first arrival (duplicates and later Kafka records change nothing)', () => {
    fc.assert(
      fc.property(arrivals, ({ order }) => {
        const got = foldLearner(deliverAll(order), allLive);
        const fold = learnerFold(allLive);
        const want = fold.prepare!(referenceOrder(order), fold.initial).reduce(fold.step, fold.initial);
        expect(seen(got)).toEqual(seen(want));
      }),
      options,
    );
  });

  test('gives the same state in every arrival order that keeps the order of each instant’s first arrivals', () => {
    const twoOrders = events.chain((list) => {
      const timed = list.map((e) => ({ ...e, timed: true, stamps: [e.second] }));
      // Order B interleaves the instants differently but keeps each instant's events in A's order.
      return fc
        .tuple(
          fc.shuffledSubarray(timed, { minLength: timed.length }),
          fc.array(fc.nat(), { minLength: timed.length, maxLength: timed.length }),
          fc.array(fc.nat(timed.length - 1), { maxLength: 4 }),
        )
        .map(([a, picks, repeats]) => {
          const queues = new Map<number, Event[]>();
          for (const e of a) queues.set(e.second, [...(queues.get(e.second) ?? []), e]);
          const b: Event[] = [];
          for (const pick of picks) {
            const open = [...queues.values()].filter((q) => q.length > 0);
            b.push(open[pick % open.length]!.shift()!);
          }
          // Redeliveries of any event, after it, anywhere.
          const redelivered = [...b, ...repeats.map((i) => a[i]!)];
          return { a: a.map((e) => message(e, e.second)), b: redelivered.map((e) => message(e, e.second)) };
        });
    });
    fc.assert(
      fc.property(twoOrders, ({ a, b }) => {
        expect(seen(foldLearner(deliverAll(b), allLive))).toEqual(seen(foldLearner(deliverAll(a), allLive)));
      }),
      options,
    );
  });

  test('says applied for the newest, late for an older place, duplicate for a known identity', () => {
    let h: Learner = emptyHistory();
    const at = (s: number, id: string): Incoming => ({ kind: 'retired', source: 'lms', id, at: instant(s), timed: true });
    const steps = [at(5, 'x'), at(3, 'y'), at(5, 'z'), at(5, 'x'), at(9, 'w')].map((m) => {
      const r = arrive(h, m);
      h = r.history;
      return r.arrival;
    });
    expect(steps).toEqual(['applied', 'late', 'applied', 'duplicate', 'applied']);
    expect(h.entries.map((e) => e.id)).toEqual(['y', 'x', 'z', 'w']);
  });

  test('moves an event without time to an earlier Kafka timestamp, never to a later one', () => {
    const untimed = (s: number): Incoming => ({ kind: 'retired', source: 'lms', id: 'u', at: instant(s), timed: false });
    const other: Incoming = { kind: 'retired', source: 'lms', id: 'o', at: instant(4), timed: true };
    const h = deliverAll([untimed(6), other, untimed(2), untimed(8)]);
    expect(h.entries.map((e) => [e.id, e.at])).toEqual([
      ['u', instant(2)],
      ['o', instant(4)],
    ]);
  });

  /**
   * Every message again, those of events without `time` stamped otherwise (another Kafka record
   * of them: later, or with `earlier` anywhere from 0 to 8, where an earlier one moves the event),
   * in a random order.
   */
  const redeliveries = (order: Incoming[], shuffle: number[], earlier = false) =>
    order
      .map((m, i) => ({ m: m.timed ? m : { ...m, at: instant(earlier ? (shuffle[i] ?? i) % 9 : 6 + (i % 3)) }, k: shuffle[i] ?? i }))
      .sort((a, b) => a.k - b.k)
      .map(({ m }) => m);

  test('compacted at its newest retirement with time, folds and takes every later arrival exactly as before, redeliveries (earlier Kafka records too) included', () => {
    const exactOnly = { horizonMs: Number.POSITIVE_INFINITY, maxEntries: Number.POSITIVE_INFINITY };
    fc.assert(
      fc.property(arrivals, events, fc.array(fc.nat()), ({ order }, more, shuffle) => {
        const fold = learnerFold(allLive);
        const whole = deliverAll(order);
        const small = compact(whole, fold, exactOnly);
        expect(seen(foldHistory(small, fold))).toEqual(seen(foldHistory(whole, fold)));
        // A reset without `time` is no floor: its earlier record may move it below what it hid.
        const next = [...redeliveries(order, shuffle, true), ...more.map((e) => message({ ...e, id: `n${e.id}` }, e.second))];
        const [a, b] = [next.reduce((h, m) => arrive(h, m).history, whole), next.reduce((h, m) => arrive(h, m).history, small)];
        expect(seen(foldHistory(b, fold))).toEqual(seen(foldHistory(a, fold)));
      }),
      options,
    );
  });

  test('compacted past any bound, takes every redelivery as a duplicate: nothing compacted away comes back', () => {
    fc.assert(
      fc.property(arrivals, fc.integer({ min: 1, max: 4 }), fc.array(fc.nat()), ({ order }, maxEntries, shuffle) => {
        const fold = learnerFold(allLive);
        const small = compact(deliverAll(order), fold, { horizonMs: Number.POSITIVE_INFINITY, maxEntries });
        const again = redeliveries(order, shuffle).reduce((h, m) => arrive(h, m).history, small);
        expect(again.entries).toEqual(small.entries);
        expect(seen(foldHistory(again, fold))).toEqual(seen(foldHistory(small, fold)));
      }),
      options,
    );
  });

  test('an event without time moved below a retirement the history was compacted at leaves it: the retirement stands, as in event time', () => {
    const fold = learnerFold(allLive);
    const login = (id: string, s: number, timed = true): Incoming => ({
      kind: 'user',
      source: 'lms',
      id,
      at: instant(s),
      timed,
      org: 'A',
      facts: { username: 'ann', email: 'ann@a.org', name: 'Ann', is_active: true },
      capable: true,
      rule: 1,
    });
    const whole = deliverAll([login('t', 1), { kind: 'retired', source: 'lms', id: 'r', at: instant(3), timed: true }, login('u', 5, false)]);
    const small = compact(whole, fold, { horizonMs: Number.POSITIVE_INFINITY, maxEntries: Number.POSITIVE_INFINITY });
    expect(foldHistory(small, fold).record).toMatchObject({ org: 'A' });
    const earlier = login('u', 0, false);
    expect(foldHistory(arrive(whole, earlier).history, fold).record).toBeNull();
    expect(foldHistory(arrive(small, earlier).history, fold).record).toBeNull();
  });

  test('compacted past its bounds keeps the newest entries and the state they fold to', () => {
    const fold = learnerFold(allLive);
    const logins: Incoming[] = Array.from({ length: 30 }, (_, i) => ({
      kind: 'user',
      source: 'lms',
      id: `l${i}`,
      at: instant(i),
      timed: true,
      org: 'A',
      facts: { username: 'ann', email: 'ann@a.org', name: 'Ann', is_active: i % 7 !== 3 },
      capable: true,
      rule: i === 0 ? 1 : 2,
    }));
    const whole = deliverAll(logins);
    const small = compact(whole, fold, { horizonMs: 10_000, maxEntries: 8 });
    expect(small.entries.map((e) => e.id)).toEqual(whole.entries.slice(-8).map((e) => e.id));
    expect(foldHistory(small, fold)).toEqual(foldHistory(whole, fold));
    // Below the floor a new event is stale and changes nothing.
    const late = arrive(small, { ...logins[0]!, id: 'older', at: instant(1) });
    expect(late.arrival).toBe('stale');
    expect(late.history.entries).toEqual(small.entries);
  });
});

// ---- compaction with rules that changed between arrivals -------------------------------------

/**
 * A learner's events whose captured rules and groups found deleted are anything (rules and groups
 * created and deleted between arrivals), in one organization mostly, so that activation periods are long and split late.
 */
const capturing = fc
  .array(
    fc.record({
      org: fc.constantFrom('A', 'A', 'A', 'A', 'A', 'A', 'A', 'B'),
      email: fc.constantFrom('ann@a.org', 'ann@a.org', 'ann@a.org', 'ann@a.org', 'ann@b.org'),
      active: fc.constantFrom(true, true, false),
      capable: fc.constantFrom(true, true, false),
      rule: fc.constantFrom(null, 1, 2),
      // The groups found deleted when it arrived (absent: stored before entries said).
      gone: fc.constantFrom<number[] | undefined>(undefined, [], [], [2], [1], [1, 2]),
      retired: fc.integer({ min: 0, max: 15 }).map((n) => n === 0),
      second: fc.integer({ min: 0, max: 9 }),
      // Mostly with `time`; one without may come again as an earlier Kafka record, later.
      untimed: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
      earlier: fc.integer({ min: 0, max: 9 }),
    }),
    { minLength: 1, maxLength: 10 },
  )
  .map((list) => {
    const messages = list.map(
      (e, i): Incoming =>
        e.retired
          ? { kind: 'retired', source: 'lms', id: `c${i}`, at: instant(e.second), timed: !e.untimed }
          : {
              kind: 'user',
              source: 'lms',
              id: `c${i}`,
              at: instant(e.second),
              timed: !e.untimed,
              org: e.org,
              facts: { username: 'ann', email: e.email, name: 'Ann', is_active: e.active },
              capable: e.capable,
              rule: e.rule,
              ...(e.gone ? { gone: e.gone } : {}),
            },
    );
    const again = list.flatMap((e, i) => (e.untimed && e.earlier < e.second ? [{ ...messages[i]!, at: instant(e.earlier) }] : []));
    return [...messages, ...again];
  });
const goneTwo = (g: number) => g !== 2;
const shown = (s: LearnerState) => ({ record: s.record, membership: s.membership });

describe('a compacted history, whatever rule each event matched and which groups it found deleted when it arrived', () => {
  test('folds as the whole history, at any bound', () => {
    fc.assert(
      fc.property(capturing, fc.integer({ min: 1, max: 6 }), (list, maxEntries) => {
        const whole = deliverAll(list);
        const small = compact(whole, learnerFold(goneTwo), { horizonMs: Number.POSITIVE_INFINITY, maxEntries });
        expect(shown(foldLearner(small, goneTwo))).toEqual(shown(foldLearner(whole, goneTwo)));
      }),
      options,
    );
  });

  test('compacted after every arrival (as a write does), folds as the history never compacted, for every arrival not below its floor', () => {
    fc.assert(
      fc.property(capturing, fc.integer({ min: 1, max: 6 }), (list, maxEntries) => {
        let small: Learner = emptyHistory();
        let whole: Learner = emptyHistory();
        for (const m of list) {
          const { history, arrival } = arrive(small, m);
          // Below the floor, an event, or an earlier Kafka record of one without `time` (which then
          // leaves the history): the bound's divergence (docs/event-core.md "Bounds").
          const folded = small.floor?.ids.includes(identityKey(m)) ?? false;
          if (arrival === 'stale' || history.entries.length < small.entries.length || (!m.timed && folded)) return;
          small = compact(history, learnerFold(goneTwo), { horizonMs: Number.POSITIVE_INFINITY, maxEntries });
          whole = arrive(whole, m).history;
          expect(shown(foldLearner(small, goneTwo))).toEqual(shown(foldLearner(whole, goneTwo)));
        }
      }),
      { ...options, numRuns: RUNS * 5 },
    );
  });

  /** Compacted after every arrival with the default bounds, and never: the arrivals of the first, and both folds. */
  const bothWays = (list: Incoming[]) => {
    let small: Learner = emptyHistory();
    let whole: Learner = emptyHistory();
    const arrivals = [];
    for (const m of list) {
      const next = arrive(small, m);
      arrivals.push(next.arrival);
      small = compact(next.history, learnerFold(allLive), HISTORY_BOUNDS);
      whole = arrive(whole, m).history;
    }
    return { arrivals, small: shown(foldLearner(small, allLive)), whole: shown(foldLearner(whole, allLive)) };
  };
  const day = (d: number) => `2026-01-${String(1 + d).padStart(2, '0')}T00:00:00.000000000Z`;
  const onDay = (id: string, d: number, o: { active?: boolean; rule?: number | null; timed?: boolean } = {}): Incoming => ({
    kind: 'user',
    source: 'lms',
    id,
    at: day(d),
    timed: o.timed ?? true,
    org: 'A',
    facts: { username: 'ann', email: 'ann@a.org', name: 'Ann', is_active: o.active ?? true },
    capable: o.active ?? true,
    rule: o.rule ?? null,
  });

  test('keeps an activation folded apart from a member without time that may move into its period (found by review)', () => {
    // A login without time (day 12) arrives first, matching rule 1; a deactivation of day 11; the
    // rule deleted, an activation of day 0 (past the horizon) and a login of day 9; then the first
    // login's earlier Kafka record (day 10): it moves before the deactivation, into the activation's
    // period, whose first arrival it is.
    const { arrivals, small, whole } = bothWays([
      onDay('m', 12, { rule: 1, timed: false }),
      onDay('d', 11, { active: false }),
      onDay('a', 0),
      onDay('b', 9),
      onDay('m', 10, { rule: 1, timed: false }),
    ]);
    expect(arrivals).toEqual(['applied', 'late', 'late', 'late', 'duplicate']);
    expect(whole.membership).toMatchObject({ group: 1, born: { at: day(0) } });
    expect(small).toEqual(whole);
  });

  test('a period continued from the floor does not push the cut forward: a deactivation one entry behind the newest is placed, not stale (found by review)', () => {
    const list = [onDay('a', 1), onDay('k', 10, { rule: 1 })];
    for (let d = 2; d < 300; d++)
      list.push({
        ...onDay(`m${d}`, 2, { rule: 2 }),
        at: day(2).replace('00:00:00', `00:${String(Math.floor(d / 60)).padStart(2, '0')}:${String(d % 60).padStart(2, '0')}`),
      });
    list.push(onDay('d', 7, { active: false }));
    const { arrivals, small, whole } = bothWays(list);
    expect(arrivals.at(-1)).toBe('late');
    expect(small).toEqual(whole);
  });

  test('keeps an activation folded apart from its period’s first arrival until a late deactivation between them can no longer split them (found by review)', () => {
    // A login of day 8 arrives with no rule yet; a rule is made; the activation of day 0 arrives
    // (more than 7 days behind: past the horizon); then a deactivation of day 4.
    const day = (d: number) => `2026-01-${String(1 + d).padStart(2, '0')}T00:00:00.000000000Z`;
    const event = (id: string, d: number, active: boolean, rule: number | null): Incoming => ({
      kind: 'user',
      source: 'lms',
      id,
      at: day(d),
      timed: true,
      org: 'A',
      facts: { username: 'ann', email: 'ann@a.org', name: 'Ann', is_active: active },
      capable: active,
      rule,
    });
    let small: Learner = emptyHistory();
    let whole: Learner = emptyHistory();
    const arrivals = [];
    for (const m of [event('Y', 8, true, null), event('X', 0, true, 7), event('D', 4, false, null)]) {
      const next = arrive(small, m);
      arrivals.push(next.arrival);
      small = compact(next.history, learnerFold(allLive), HISTORY_BOUNDS);
      whole = arrive(whole, m).history;
    }
    expect(arrivals).toEqual(['applied', 'late', 'late']);
    // Split, the activation of day 0 is a period of its own: it applies the rule it matched.
    expect(foldLearner(whole, allLive).membership).toMatchObject({ group: 7, born: { at: day(0) } });
    expect(shown(foldLearner(small, allLive))).toEqual(shown(foldLearner(whole, allLive)));
  });
});

// ---- the learner's rules, one by one ---------------------------------------------------------

describe('a learner', () => {
  let n = 0;
  const user = (
    s: number,
    o: Partial<{ org: string; active: boolean; capable: boolean; rule: number | null; staff: boolean; admin: boolean; email: string }> = {},
  ): Incoming => ({
    kind: 'user',
    source: 'lms',
    id: `u${++n}`,
    at: instant(s),
    timed: true,
    org: o.org ?? 'A',
    facts: {
      username: 'ann',
      email: o.email ?? 'ann@a.org',
      name: 'Ann',
      is_active: o.active ?? true,
      ...(o.staff === undefined ? {} : { is_staff: o.staff }),
      ...(o.admin === undefined ? {} : { is_site_admin: o.admin }),
    },
    capable: o.capable ?? true,
    rule: o.rule === undefined ? 1 : o.rule,
  });
  const retired = (s: number): Incoming => ({ kind: 'retired', source: 'lms', id: `r${++n}`, at: instant(s), timed: true });
  const fold = (messages: Incoming[], isLive: (g: number) => boolean = allLive) => foldLearner(deliverAll(messages), isLive);

  test('keeps a flag an event does not carry from the events before it in time, whichever arrives first', () => {
    const older = user(1, { staff: true });
    const newer = user(2);
    expect(fold([older, newer]).record?.is_staff).toBe(true);
    expect(fold([newer, older]).record?.is_staff).toBe(true);
  });

  test('applies a rule once per activation period: a later activation of the same period makes nothing after an administrator’s removal', () => {
    const first = user(1);
    const removal = (h: Learner): Incoming => ({ kind: 'admin', source: 'cag:admin', id: 'x', ...placeNow(h), timed: true, org: 'A', group: null });
    let h = deliverAll([first]);
    expect(foldLearner(h, allLive).membership?.group).toBe(1);
    h = arrive(h, removal(h)).history;
    h = arrive(h, user(3)).history;
    h = arrive(h, user(0)).history; // an older activation of the same period, arriving late
    expect(foldLearner(h, allLive).membership).toBeNull();
    h = arrive(h, user(4, { active: false })).history;
    h = arrive(h, user(5, { rule: 2 })).history;
    expect(foldLearner(h, allLive).membership).toMatchObject({ group: 2, by: 'rule' });
  });

  test('a period’s rules are those of its first arrival: a rule created, deleted or taken with its group between two arrivals of one period changes nothing, whichever arrives first', () => {
    // Rule 1 created between the two arrivals: the older event arriving second is no new activation.
    expect(foldLearner(deliverAll([user(5, { rule: null }), user(3, { rule: 1 })]), allLive).membership).toBeNull();
    expect(foldLearner(deliverAll([user(3, { rule: null }), user(5, { rule: 1 })]), allLive).membership).toBeNull();
    // Rule 1 deleted between them: the period was applied with it, at the oldest event's place.
    expect(foldLearner(deliverAll([user(5, { rule: 1 }), user(3, { rule: null })]), allLive).membership).toMatchObject({
      group: 1,
      by: 'rule',
      born: { at: instant(3) },
    });
    // What the first arrival made is gone with its group, and a new rule names group 2: nothing again this period.
    const gone = (g: number) => g !== 1;
    const h = deliverAll([user(5, { rule: 1 }), user(3, { rule: 2 }), user(4, { rule: 2 })]);
    expect(foldLearner(h, gone).membership).toBeNull();
    // A deactivation arriving late splits the period: the part before it is a period of its own, first arrived at 3.
    expect(foldLearner(arrive(h, user(4, { active: false, rule: null })).history, gone).membership).toMatchObject({ group: 2, by: 'rule' });
    // Emails of two domains in one period: the first arrival with the activation's domain decides;
    // before it, one of the other domain matched for its own only (docs/event-core.md "Bounds").
    const other = user(5, { rule: null, email: 'ann@b.org' });
    expect(foldLearner(deliverAll([other, user(4, { rule: null }), user(3, { rule: 1 })]), allLive).membership).toBeNull();
    expect(foldLearner(deliverAll([other, user(3, { rule: 1 })]), allLive).membership).toMatchObject({ group: 1, born: { at: instant(3) } });
  });

  test('an administrator’s change stands against an older event arriving later, and a newer one acts after it', () => {
    let h = deliverAll([user(5, { rule: null })]);
    h = arrive(h, { kind: 'admin', source: 'cag:admin', id: 'a', ...placeNow(h), timed: true, org: 'A', group: 3 }).history;
    h = arrive(h, user(4, { rule: 1 })).history;
    expect(foldLearner(h, allLive).membership).toMatchObject({ group: 3, by: 'admin' });
    h = arrive(h, retired(6)).history;
    expect(foldLearner(h, allLive)).toMatchObject({ record: null, membership: null });
  });

  test('a membership moved to another group is the same membership after the group it left is deleted: who made it and where it began stay; deleted with the group it joined, the learner is in no group', () => {
    // A rule's membership (group 1, made at the activation), then an administrator moves it to group 3.
    let h = deliverAll([user(1)]);
    const moved = { by: 'rule' as const, born: foldLearner(h, allLive).membership!.born };
    h = arrive(h, { kind: 'admin', source: 'cag:admin', id: 'm', ...placeNow(h), timed: true, org: 'A', group: 3, moved }).history;
    const before = foldLearner(h, allLive).membership;
    expect(before).toMatchObject({ group: 3, by: 'rule', born: { at: instant(1) } });
    // Group 1 deleted since: the fold reads it as not live, and the membership is still the one that was moved.
    expect(foldLearner(h, (g) => g !== 1).membership).toEqual(before);
    // Group 3 deleted: no membership, and a join finds the learner in no group.
    expect(foldLearner(h, (g) => g !== 3).membership).toBeNull();
    h = arrive(h, { kind: 'join', source: 'cag:apply', id: 'j', ...placeNow(h), timed: true, org: 'A', group: 2 }).history;
    expect(foldLearner(h, (g) => g !== 3).membership).toMatchObject({ group: 2, by: 'rule' });
  });

  test('a PATCH keeps the membership it moved, as it was then, whatever older events arriving later make before it; of an incarnation ended before it, it begins at the move', () => {
    // An administrator's membership (born at `c`, instant 1), moved at instant 9; its group 2 is deleted since.
    let h = deliverAll([user(1, { rule: null })]);
    h = arrive(h, { kind: 'admin', source: 'cag:admin', id: 'c', ...placeNow(h), timed: true, org: 'A', group: 2 }).history;
    const c = foldLearner(h, allLive).membership!.born;
    h = arrive(h, user(9, { capable: false, rule: null })).history;
    const move = { kind: 'admin' as const, source: 'cag:admin', id: 'm', timed: true, org: 'A', group: 3, moved: { by: 'admin' as const, born: c } };
    h = arrive(h, { ...move, ...placeNow(h) }).history;
    // A late deactivation and activation between them: the activation finds group 2 gone and makes a rule's membership.
    const late = arrive(arrive(h, user(3, { active: false })).history, user(4, { rule: 1 })).history;
    expect(foldLearner(late, (g) => g !== 2).membership).toEqual({ group: 3, by: 'admin', born: c });
    // A PATCH stored before PATCHes said what they moved moves what the walk holds there.
    const legacy = { ...late, entries: late.entries.map((e) => (e.id === 'm' ? { ...move, at: e.at, seq: e.seq, moved: undefined, move: true as const } : e)) };
    expect(foldLearner(legacy, (g) => g !== 2).membership).toMatchObject({ group: 3, by: 'rule', born: { at: instant(4) } });
    // A move away and back before the move: the membership it moved was of the learner's incarnation before.
    const back = arrive(arrive(h, user(5, { org: 'B', rule: null })).history, user(6, { rule: null, capable: false })).history;
    const moveAt = back.entries.find((e) => e.id === 'm')!;
    expect(foldLearner(back, allLive).membership).toEqual({ group: 3, by: 'admin', born: { at: moveAt.at, seq: moveAt.seq } });
    // Who made it stays: a rule's membership moved so is still the rule's.
    const ruled = { ...back, entries: back.entries.map((e) => (e.id === 'm' ? { ...e, moved: { by: 'rule' as const, born: c } } : e)) };
    expect(foldLearner(ruled, allLive).membership).toEqual({ group: 3, by: 'rule', born: { at: moveAt.at, seq: moveAt.seq } });
  });

  test('a move leaves the membership behind, keeps is_staff and starts site administration again', () => {
    const s = fold([user(1, { staff: true, admin: true }), user(2, { org: 'B', rule: null })]);
    expect(s.record).toMatchObject({ org: 'B', is_staff: true, is_site_admin: false });
    expect(s.membership).toBeNull();
    expect(s.since).toMatchObject({ at: instant(2) });
  });

  test('a retirement older than the record, arriving late, takes what began before it, and the learner’s next activation applies its rule again', () => {
    const s = fold([user(1), user(5, { capable: false }), retired(3)]);
    expect(s.record).toMatchObject({ org: 'A' });
    expect(s.membership).toBeNull();
    expect(fold([user(1), user(5), retired(3)]).membership).toMatchObject({ group: 1, born: { at: instant(5) } });
  });

  test('a rule whose group is gone names no group, and a membership in a deleted group is none', () => {
    expect(fold([user(1, { rule: 2 }), user(2, { active: false }), user(3, { rule: 1 })], (g) => g !== 2).membership?.group).toBe(1);
    expect(fold([user(1, { rule: 2 })], (g) => g !== 2).membership).toBeNull();
  });

  test('what hangs off a record is held only by its incarnation in its organization', () => {
    const h = deliverAll([user(1), user(4)]);
    const born = placeNow(h);
    const s = foldLearner(h, allLive);
    expect(holdsChild(s, 'A', born)).toBe(true);
    expect(holdsChild(s, 'B', born)).toBe(false);
    // A retirement between, arriving late: the incarnation began again after it, so a child born before is gone.
    const later = foldLearner(arrive(arrive(h, retired(2)).history, user(3)).history, allLive);
    expect(holdsChild(later, 'A', born)).toBe(true);
    expect(holdsChild(later, 'A', { at: instant(1), seq: 1 })).toBe(false);
  });
});

describe('a course', () => {
  const catalog = (id: string, s: number, org = 'A', name = 'C'): Arriving<CourseEntry> => ({
    kind: 'catalog',
    source: 'studio',
    id,
    at: instant(s),
    timed: true,
    org,
    name,
  });
  const deleted = (id: string, s: number): Arriving<CourseEntry> => ({ kind: 'deleted', source: 'studio', id, at: instant(s), timed: true });
  const fold = (list: Arriving<CourseEntry>[]) => foldCourse(list.reduce((h, m) => arrive(h, m).history, emptyHistory<CourseEntry, typeof NO_COURSE>()));

  test('stays deleted against older events, and a deletion of a tie arriving later takes the links made at that time', () => {
    expect(fold([deleted('d', 5), catalog('c', 3)]).record).toBeNull();
    const h = [catalog('c', 3)].reduce((x, m) => arrive(x, m).history, emptyHistory<CourseEntry, typeof NO_COURSE>());
    const born = placeNow(h);
    const after = foldCourse(arrive(arrive(h, deleted('d', 3)).history, catalog('c2', 4)).history);
    expect(after.record).toMatchObject({ org: 'A' });
    expect(holdsChild(after, 'A', born)).toBe(false);
  });

  test('a move and a move back, arriving after the newer event, take what was hung on the course before', () => {
    const h = [catalog('c1', 1), catalog('c3', 3)].reduce((x, m) => arrive(x, m).history, emptyHistory<CourseEntry, typeof NO_COURSE>());
    const born = placeNow(h);
    const later = foldCourse(arrive(h, catalog('c2', 2, 'B')).history);
    expect(later.record).toMatchObject({ org: 'A' });
    expect(placeOrder(later.since!, { at: instant(3), seq: 0 }) > 0).toBe(true);
    expect(holdsChild(later, 'A', born)).toBe(true);
    expect(holdsChild(later, 'A', { at: instant(1), seq: 1 })).toBe(false);
  });
});

// ---- against the reference model ---------------------------------------------------------------

/**
 * Random histories of user events (several learners, two organizations, moves, retirements,
 * duplicates, older and equal times) and administrators' membership writes and rule and group
 * changes, delivered to the reference model and, entry by entry, to the fold; every admin write's
 * status and the final users and memberships must agree.
 */
describe('the fold against the reference model', () => {
  const userIds = [1, 2];
  const orgs = ['A', 'B'];
  const step = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('user' as const),
        uid: fc.constantFrom(...userIds),
        kind: fc.constantFrom('activated', 'registered', 'login', 'updated', 'retired'),
        org: fc.constantFrom(...orgs),
        active: fc.boolean(),
        domain: fc.constantFrom('a.org', 'b.org'),
        time: fc.integer({ min: 0, max: 8 }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('again' as const), pick: fc.nat() }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constantFrom('create' as const, 'move' as const, 'remove' as const),
        uid: fc.constantFrom(...userIds),
        org: fc.constantFrom(...orgs),
        group: fc.integer({ min: 0, max: 3 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constantFrom('deleteGroup' as const, 'deleteRule' as const), group: fc.integer({ min: 0, max: 3 }) }) },
    // A rule applied to the learners already there (`POST membership-rules/<id>/apply/`).
    { weight: 1, arbitrary: fc.record({ t: fc.constant('apply' as const), org: fc.constantFrom(...orgs), domain: fc.constantFrom('a.org', 'b.org') }) },
  );

  test('an administrator’s move stands against an older retirement arriving later', () => {
    let h: Learner = emptyHistory();
    const activation = (id: string, s: number): Incoming => ({
      kind: 'user',
      source: 'lms',
      id,
      at: instant(s),
      timed: true,
      org: 'A',
      facts: { username: 'ann', email: 'ann@a.org', name: 'Ann', is_active: true },
      capable: true,
      rule: 2,
    });
    for (const m of [activation('a1', 1), activation('a0', 0)]) h = arrive(h, m).history;
    h = arrive(h, { kind: 'admin', source: 'cag:admin', id: 'move', ...placeNow(h), timed: true, org: 'A', group: 1 }).history;
    h = arrive(h, { kind: 'retired', source: 'lms', id: 'r0', at: instant(0), timed: true }).history;
    // In event time: a0, the retirement (a tie, arriving after a0), a1 (the learner again: rule 2), then the move to 1.
    expect(foldLearner(h, allLive).membership).toMatchObject({ group: 1, by: 'admin' });
  });

  test('agree on every status, user and membership', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 24 }), (steps) => {
        const model = new EventModel();
        // Groups 0-3: 0 and 1 in A, 2 and 3 in B; a rule per (organization, domain).
        const groups = [model.createGroup('A', 'g0'), model.createGroup('A', 'g1'), model.createGroup('B', 'g2'), model.createGroup('B', 'g3')];
        const groupOrg = (g: number) => (g < 2 ? 'A' : 'B');
        const live = new Set(groups);
        const rules = new Map<string, number>([
          ['A a.org', groups[0]!],
          ['A b.org', groups[1]!],
          ['B a.org', groups[2]!],
        ]);
        for (const [k, g] of rules) model.createRule(k.split(' ')[0]!, k.split(' ')[1]!, g);
        const isLive = (g: number) => live.has(g);
        // What an activation or join carries (learners.ts `withGone`): the groups deleted when it arrived.
        const gone = () => groups.filter((g) => !live.has(g));
        const histories = new Map<number, Learner>(userIds.map((id) => [id, emptyHistory()]));
        const sent: ModelEvent[] = [];
        const deliver = (e: ModelEvent, uid: number) => {
          model.deliver(e);
          const at = instant(e.time);
          const base = { source: e.source, id: e.id, at, timed: true };
          let entry: Incoming;
          if (e.kind === 'retired') entry = { ...base, kind: 'retired' };
          else if (e.kind === 'activated' || e.kind === 'registered' || e.kind === 'login' || e.kind === 'updated') {
            const active = e.kind === 'activated' || e.user.is_active;
            const capable = e.kind !== 'updated';
            const rule = capable && active ? (rules.get(`${e.organization} ${e.user.email.split('@')[1]}`) ?? null) : null;
            entry = {
              ...base,
              kind: 'user',
              org: e.organization!,
              facts: { username: e.user.username, email: e.user.email, name: e.user.name, is_active: active },
              capable,
              rule,
              gone: gone(),
            };
          } else return;
          histories.set(uid, arrive(histories.get(uid)!, entry).history);
        };
        let admins = 0;
        // As learners.ts `applyLearnerEntry` writes them: a move says what it moved, as the administrator saw it.
        const admin = (uid: number, org: string, group: number | null, move?: true) => {
          const h = histories.get(uid)!;
          const m = move && foldLearner(h, isLive).membership;
          const moved = m ? { moved: { by: m.by, born: m.born } } : {};
          histories.set(uid, arrive(h, { kind: 'admin', source: 'cag:admin', id: `a${++admins}`, ...placeNow(h), timed: true, org, group, ...moved }).history);
        };
        steps.forEach((s, i) => {
          switch (s.t) {
            case 'user': {
              const e: ModelEvent =
                s.kind === 'retired'
                  ? { kind: 'retired', source: 'lms', id: `e${i}`, time: s.time, organization: s.org, userId: s.uid }
                  : {
                      kind: s.kind,
                      source: 'lms',
                      id: `e${i}`,
                      time: s.time,
                      organization: s.org,
                      user: { id: s.uid, is_active: s.active, username: `u${s.uid}`, email: `u${s.uid}@${s.domain}`, name: 'N' },
                    };
              sent.push(e);
              deliver(e, s.uid);
              break;
            }
            case 'again': {
              const e = sent[s.pick % Math.max(1, sent.length)];
              if (e) deliver(e, e.kind === 'retired' ? e.userId : (e as Extract<ModelEvent, { user: unknown }>).user.id);
              break;
            }
            case 'create':
            case 'move':
            case 'remove': {
              const g = groups[s.group]!;
              const state = foldLearner(histories.get(s.uid)!, isLive);
              const here = state.record?.org === s.org;
              const has = here && state.membership !== null;
              let want: number;
              if (s.t === 'create') {
                want = model.createMembership(s.org, s.uid, g);
                const ok = here && live.has(g) && groupOrg(s.group) === s.org && !has;
                expect([s.t, ok ? 201 : 400]).toEqual([s.t, want]);
                if (ok) admin(s.uid, s.org, g);
              } else if (s.t === 'move') {
                want = model.moveMembership(s.org, s.uid, g);
                const ok = has && live.has(g) && groupOrg(s.group) === s.org;
                // The model answers 404 before it looks at the group; the service too (no membership, nothing to move).
                expect([s.t, !has ? 404 : ok ? 200 : 400]).toEqual([s.t, want]);
                if (ok) admin(s.uid, s.org, g, true);
              } else {
                want = model.deleteMembership(s.org, s.uid);
                expect([s.t, has ? 204 : 404]).toEqual([s.t, want]);
                if (has) admin(s.uid, s.org, null);
              }
              break;
            }
            case 'deleteGroup': {
              const g = groups[s.group]!;
              model.deleteGroup(groupOrg(s.group), g);
              live.delete(g);
              for (const [k, v] of rules) if (v === g) rules.delete(k);
              // The model reconciles a learner's membership at its next event: give each one.
              for (const e of sent) model.deliver(e);
              break;
            }
            case 'apply': {
              const want = model.applyRule(s.org, s.domain);
              const group = rules.get(`${s.org} ${s.domain}`);
              if (group === undefined) {
                expect([s.t, 404]).toEqual([s.t, want.status]);
                break;
              }
              // As the service does: each learner here, active, with no membership and the rule's domain, gets a join entry.
              let created = 0;
              for (const uid of userIds) {
                const state = foldLearner(histories.get(uid)!, isLive);
                const rec = state.record;
                if (rec?.org !== s.org || !rec.is_active || state.membership !== null || rec.email.split('@')[1] !== s.domain) continue;
                const h = histories.get(uid)!;
                const next: Learner = arrive(h, {
                  kind: 'join',
                  source: 'cag:admin',
                  id: `j${++admins}`,
                  ...placeNow(h),
                  timed: true,
                  org: s.org,
                  group,
                  gone: gone(),
                }).history;
                histories.set(uid, next);
                if (foldLearner(next, isLive).membership?.group === group) created++;
              }
              expect([s.t, 200, created]).toEqual([s.t, want.status, 'created' in want ? want.created : -1]);
              break;
            }
            case 'deleteRule': {
              const key = `${groupOrg(s.group)} ${s.group % 2 === 0 ? 'a.org' : 'b.org'}`;
              model.deleteRule(groupOrg(s.group), key.split(' ')[1]!);
              rules.delete(key);
              break;
            }
          }
        });
        for (const uid of userIds) {
          const state = foldLearner(histories.get(uid)!, isLive);
          for (const org of orgs) {
            const want = model.user(org, uid);
            const got = state.record?.org === org ? state.record : null;
            expect([uid, org, got && { username: got.username, email: got.email, is_active: got.is_active }]).toEqual([
              uid,
              org,
              want && { username: want.username, email: want.email, is_active: want.is_active },
            ]);
            expect([uid, org, got ? (state.membership?.group ?? null) : null]).toEqual([uid, org, model.membership(org, uid)]);
            const automatic = model.view(org).memberships.find((m) => m.user === uid)?.automatic ?? null;
            expect([uid, org, 'automatic', got && state.membership ? state.membership.by === 'rule' : null]).toEqual([uid, org, 'automatic', automatic]);
          }
        }
      }),
      options,
    );
  });
});

/**
 * Courses the same way: catalog events (moves between two organizations), deletions, duplicates,
 * older and equal times, and administrators' links and public records, each made at the course's
 * place (`placeNow`) and kept while `holdsChild` holds; statuses, courses, links and public
 * records must agree with the reference model.
 */
describe('the course fold against the reference model', () => {
  const keys = ['course-v1:A+1+1', 'course-v1:A+2+1'];
  const orgs = ['A', 'B'];
  const step = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        t: fc.constantFrom('catalog' as const, 'catalog' as const, 'deleted' as const),
        key: fc.constantFrom(0, 0, 0, 1),
        org: fc.constantFrom('A', 'A', 'B'),
        name: fc.constantFrom('X', 'Y'),
        time: fc.integer({ min: 0, max: 5 }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('again' as const), pick: fc.nat() }) },
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constantFrom('link' as const, 'link' as const, 'unlink' as const, 'public' as const, 'private' as const),
        key: fc.constantFrom(0, 0, 0, 1),
        org: fc.constantFrom('A', 'A', 'B'),
        // Mostly one of the organization's own groups, so most links are made.
        group: fc.nat(4),
      }),
    },
    // Groups 1 and 3 may go; 0 and 2 stay, so links can still be made.
    { weight: 1, arbitrary: fc.record({ t: fc.constant('deleteGroup' as const), group: fc.constantFrom(1, 3) }) },
  );
  type Course = History<CourseEntry, typeof NO_COURSE>;
  interface Child {
    org: string;
    key: string;
    group: number | null;
    born: { at: string; seq: number };
  }

  test('agree on every status, course, link and public record', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 24, size: 'medium' }), (steps) => {
        const model = new EventModel();
        const groups = [model.createGroup('A', 'g0'), model.createGroup('A', 'g1'), model.createGroup('B', 'g2'), model.createGroup('B', 'g3')];
        const groupOrg = (i: number) => (i < 2 ? 'A' : 'B');
        const live = new Set(groups);
        const histories = new Map<string, Course>(keys.map((k) => [k, emptyHistory()]));
        let children: Child[] = [];
        const sent: ModelEvent[] = [];
        const prune = () => {
          children = children.filter((c) => holdsChild(foldCourse(histories.get(c.key)!), c.org, c.born) && (c.group === null || live.has(c.group)));
        };
        const deliver = (e: ModelEvent) => {
          if (e.kind !== 'catalog' && e.kind !== 'courseDeleted') return;
          model.deliver(e);
          const base = { source: e.source, id: e.id, at: instant(e.time), timed: true };
          const entry: Arriving<CourseEntry> =
            e.kind === 'catalog' ? { ...base, kind: 'catalog', org: e.organization!, name: e.name } : { ...base, kind: 'deleted' };
          histories.set(e.key, arrive(histories.get(e.key)!, entry).history);
          prune();
        };
        steps.forEach((s, i) => {
          const key = 'key' in s ? keys[s.key]! : '';
          const here = (org: string) => foldCourse(histories.get(key)!).record?.org === org;
          switch (s.t) {
            case 'catalog':
            case 'deleted': {
              const e: ModelEvent =
                s.t === 'catalog'
                  ? { kind: 'catalog', source: 'studio', id: `e${i}`, time: s.time, organization: s.org, key, name: s.name }
                  : { kind: 'courseDeleted', source: 'studio', id: `e${i}`, time: s.time, key };
              sent.push(e);
              deliver(e);
              break;
            }
            case 'again': {
              const e = sent[s.pick % Math.max(1, sent.length)];
              if (e) deliver(e);
              break;
            }
            case 'link': {
              const index = s.group === 4 ? 2 : (s.org === 'A' ? 0 : 2) + (s.group % 2);
              const g = groups[index]!;
              const ok = here(s.org) && live.has(g) && groupOrg(index) === s.org && !children.some((c) => c.key === key && c.group === g);
              expect(['link', ok ? 201 : 400]).toEqual(['link', model.link(s.org, key, g)]);
              if (ok) children.push({ org: s.org, key, group: g, born: placeNow(histories.get(key)!) });
              break;
            }
            case 'unlink': {
              const g = groups[(s.org === 'A' ? 0 : 2) + (s.group % 2)]!;
              const at = children.findIndex((c) => c.org === s.org && c.key === key && c.group === g);
              expect(['unlink', at >= 0 ? 204 : 404]).toEqual(['unlink', model.unlink(s.org, key, g)]);
              if (at >= 0) children.splice(at, 1);
              break;
            }
            case 'public': {
              const ok = here(s.org) && !children.some((c) => c.key === key && c.group === null);
              expect(['public', ok ? 201 : 400]).toEqual(['public', model.makePublic(s.org, key)]);
              if (ok) children.push({ org: s.org, key, group: null, born: placeNow(histories.get(key)!) });
              break;
            }
            case 'private': {
              const at = children.findIndex((c) => c.org === s.org && c.key === key && c.group === null);
              expect(['private', at >= 0 ? 204 : 404]).toEqual(['private', model.makePrivate(s.org, key)]);
              if (at >= 0) children.splice(at, 1);
              break;
            }
            case 'deleteGroup':
              model.deleteGroup(groupOrg(s.group), groups[s.group]!);
              live.delete(groups[s.group]!);
              prune();
              break;
          }
        });
        for (const org of orgs) {
          const view = model.view(org);
          const courses = keys.flatMap((k) => {
            const s = foldCourse(histories.get(k)!);
            return s.record?.org === org ? [{ id: k, name: s.record.name }] : [];
          });
          expect([org, courses]).toEqual([org, view.courses.map((c) => ({ id: c.id, name: c.name }))]);
          const links = children.filter((c) => c.org === org && c.group !== null).map((c) => `${c.key}|${c.group}`);
          expect([org, links.sort()]).toEqual([org, view.links.map((l) => `${l.course}|${l.group}`).sort()]);
          const publics = children.filter((c) => c.org === org && c.group === null).map((c) => c.key);
          expect([org, publics.sort()]).toEqual([org, [...view.publics].sort()]);
        }
      }),
      {
        ...options,
        // A link made, then a newer event, then an older move away arriving last: in event time the move took the link.
        examples: [
          [
            [
              { t: 'catalog', key: 0, org: 'A', name: 'X', time: 0 },
              { t: 'link', key: 0, org: 'A', group: 0 },
              { t: 'catalog', key: 0, org: 'A', name: 'X', time: 2 },
              { t: 'catalog', key: 0, org: 'B', name: 'X', time: 1 },
            ],
          ],
        ],
      },
    );
  });
});
