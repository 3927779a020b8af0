/**
 * A record's history: the entries (events, administrators' changes) it has received, in the one
 * order the event core knows (docs/event-core.md): by instant, then by arrival. Pure: no database,
 * no Kafka, no HTTP. A learner's and a course's state are folds over it (learner-fold.ts,
 * course-fold.ts).
 */

/** Where an entry stands: its normalized instant (event-time.ts), then its arrival on the record. */
export interface Place {
  at: string;
  seq: number;
}

/** Negative when `a` comes first. Instants are normalized strings, so string order is instant order. */
export const placeOrder = (a: Place, b: Place): number => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.seq - b.seq);

/**
 * A place as one string that sorts as the place does (instants are fixed-width), for the
 * database's comparisons: '' for none, before every place.
 */
export const placeKey = (p: Place | null): string => (p === null || p.at === '' ? '' : `${p.at}#${String(p.seq).padStart(10, '0')}`);

/** What every entry has: its exact identity, its place, and whether `at` came from the event's `time`. */
export interface EntryBase extends Place {
  source: string;
  id: string;
  /** false: `at` is the earliest Kafka timestamp known for the event, lowered when an earlier one arrives. */
  timed: boolean;
}

/**
 * The state below the entries kept: what the entries compacted away folded to, where the last of
 * them stood, and the identities of every entry compacted away or refused as stale (identityKey),
 * so that none of them is taken for a new event when it comes again.
 */
export interface Floor<S> {
  place: Place;
  state: S;
  ids: string[];
}

export interface History<E extends EntryBase, S> {
  /** Arrivals so far: the next entry's `seq` is one more. */
  seq: number;
  /** In place order. */
  entries: E[];
  floor: Floor<S> | null;
}

/**
 * What an arrival was: `applied` (now the newest entry), `late` (placed before another entry),
 * `duplicate` (its identity was there; an event without `time` may have moved earlier), `stale`
 * (placed below the floor: it changes nothing, docs/event-core.md "Bounds").
 */
export type Arrival = 'applied' | 'late' | 'duplicate' | 'stale';

/** A fold: the state before any entry, one entry's effect, and which entries make everything before them irrelevant. */
export interface Fold<E extends EntryBase, S> {
  initial: S;
  step(state: S, entry: E): S;
  /** An entry after which the state depends on nothing before it (a retirement, a course's deletion). */
  resets(entry: E): boolean;
  /**
   * What each entry says to `step`, seen with the entries around it (the learner's fold: which
   * rule a period's activation applies depends on which of the period's events arrived first).
   * Given the entries walked from `start`, in order; returns them in the same order.
   */
  prepare?(entries: E[], start: S): E[];
  /**
   * Where `compact` may cut `entries` (walked from `start`) instead of `cut`, so that what it folds
   * into the floor does not depend on what may still change above it (with `prepare`'s look-ahead,
   * an entry kept can decide one folded): `cut` itself, or back before it when that keeps at most
   * `maxKept` entries, else forward (everything, at worst).
   */
  stableCut?(entries: E[], start: S, cut: number, maxKept: number): number;
}

/** An entry as it arrives, before the history gives it its `seq` (distributed over a union of entry kinds). */
export type Arriving<E extends EntryBase> = E extends unknown ? Omit<E, 'seq'> : never;

export const emptyHistory = <E extends EntryBase, S>(): History<E, S> => ({ seq: 0, entries: [], floor: null });

const sameIdentity = (a: EntryBase, b: Pick<EntryBase, 'source' | 'id'>) => a.source === b.source && a.id === b.id;

/** An identity as one string: exact, and no two (source, id) pairs meet. */
export const identityKey = (e: Pick<EntryBase, 'source' | 'id'>): string => JSON.stringify([e.source, e.id]);

/** How many identities a floor remembers (the newest): past them a redelivery counts as a new event (docs/event-core.md "Bounds"). */
export const FLOOR_IDS = 4096;

const remember = (ids: string[], more: string[]) => [...ids, ...more].slice(-FLOOR_IDS);

const sorted = <E extends EntryBase>(entries: E[]): E[] => [...entries].sort(placeOrder);

/** The newest entry's place, or the floor's when none is kept. */
export function newestPlace(h: History<EntryBase, unknown>): Place | null {
  return h.entries.at(-1) ?? h.floor?.place ?? null;
}

/**
 * Where something made now (an administrator's change, a child written under the record) stands
 * in the record's order: after every entry it holds, before any that arrives later.
 */
export function placeNow(h: History<EntryBase, unknown>): Place {
  return { at: newestPlace(h)?.at ?? '', seq: h.seq };
}

/**
 * The one way into a history. A known identity is a duplicate (an event without `time` takes the
 * earlier `at`, which may move it); a new one takes the next `seq` and its place.
 */
export function arrive<E extends EntryBase, S>(h: History<E, S>, entry: Arriving<E>): { history: History<E, S>; arrival: Arrival } {
  if (h.floor?.ids.includes(identityKey(entry))) return { history: h, arrival: 'duplicate' };
  const known = h.entries.find((e) => sameIdentity(e, entry));
  if (known) {
    // The first record of an identity says whether it has a `time`; an earlier Kafka timestamp moves one without.
    if (known.timed || entry.timed || entry.at >= known.at) return { history: h, arrival: 'duplicate' };
    if (h.floor && placeOrder({ at: entry.at, seq: known.seq }, h.floor.place) < 0) {
      // Below the floor, as a new event there would be: it leaves the history (exactly right under
      // a reset with `time`; a floor of the bounds is where this diverges).
      const entries = h.entries.filter((e) => e !== known);
      return { history: { ...h, entries, floor: { ...h.floor, ids: remember(h.floor.ids, [identityKey(known)]) } }, arrival: 'duplicate' };
    }
    const lowered = h.entries.map((e) => (e === known ? { ...e, at: entry.at } : e));
    return { history: { ...h, entries: sorted(lowered) }, arrival: 'duplicate' };
  }
  const placed = { ...entry, seq: h.seq + 1 } as unknown as E;
  if (h.floor && placeOrder(placed, h.floor.place) < 0) {
    return { history: { ...h, seq: placed.seq, floor: { ...h.floor, ids: remember(h.floor.ids, [identityKey(entry)]) } }, arrival: 'stale' };
  }
  const entries = sorted([...h.entries, placed]);
  return { history: { ...h, seq: placed.seq, entries }, arrival: entries.at(-1) === placed ? 'applied' : 'late' };
}

/** The state the history folds to. */
export function foldHistory<E extends EntryBase, S>(h: History<E, S>, fold: Fold<E, S>): S {
  return walk(fold, h.entries, h.floor?.state ?? fold.initial);
}

/** The state `entries` (in order) fold to from `start`. */
const walk = <E extends EntryBase, S>(fold: Fold<E, S>, entries: E[], start: S): S =>
  (fold.prepare ? fold.prepare(entries, start) : entries).reduce(fold.step, start);

export interface Compaction {
  /** Entries whose instant is this far behind the newest one are folded into the floor. */
  horizonMs: number;
  /** At most this many entries are kept; older ones are folded into the floor. */
  maxEntries: number;
}

/**
 * The default bounds a history keeps (docs/event-core.md "Bounds"; the settings
 * EVENT_HISTORY_DAYS and EVENT_HISTORY_ENTRIES): seven days, Kafka's default retention, past
 * which no redelivery comes; and 256 entries, a few tens of KiB per record.
 */
export const HISTORY_BOUNDS: Compaction = { horizonMs: 7 * 24 * 3600 * 1000, maxEntries: 256 };

const instantMs = (at: string) => Date.parse(`${at.slice(0, 23)}Z`);

/**
 * Folds into the floor what can no longer change the result: every entry before the newest
 * reset with `time` (exactly: a reset makes the state independent of them; one without `time`
 * may still move earlier, and what it passes counts again), then entries past the bounds (the
 * bounds of docs/event-core.md, where a new event below the floor is counted stale); never
 * between entries of which a kept one may still change what a folded one does (`stableCut`):
 * the cut goes back, or, when that would keep more than `maxEntries`, forward.
 */
export function compact<E extends EntryBase, S>(h: History<E, S>, fold: Fold<E, S>, bounds: Compaction): History<E, S> {
  let lastReset = h.entries.length - 1;
  while (lastReset >= 0 && !(fold.resets(h.entries[lastReset]!) && h.entries[lastReset]!.timed)) lastReset--;
  // Before a reset nothing counts, so the floor folds only from the reset on.
  const from = Math.max(0, lastReset);
  const start = from === 0 ? (h.floor?.state ?? fold.initial) : fold.initial;
  const rest = h.entries.slice(from);
  let cut = from;
  const newest = h.entries.at(-1);
  if (newest) {
    const oldest = instantMs(newest.at) - bounds.horizonMs;
    while (cut < h.entries.length - 1 && (h.entries.length - cut > bounds.maxEntries || instantMs(h.entries[cut]!.at) < oldest)) cut++;
  }
  if (fold.stableCut && cut > from) cut = from + fold.stableCut(rest, start, cut - from, bounds.maxEntries);
  if (cut === 0) return h;
  // What the folded entries say is prepared with the entries kept after them (`prepare` looks ahead).
  const folded = (fold.prepare ? fold.prepare(rest, start) : rest).slice(0, cut - from);
  const gone = h.entries.slice(0, cut).map(identityKey);
  return {
    seq: h.seq,
    entries: h.entries.slice(cut),
    // The floor's place alone (not the entry: what it said, a profile among it, goes with it).
    floor: {
      place: { at: h.entries[cut - 1]!.at, seq: h.entries[cut - 1]!.seq },
      state: folded.reduce(fold.step, start),
      ids: remember(h.floor?.ids ?? [], gone),
    },
  };
}

/**
 * Whether a child made at `born` in `org` (a link or public record under a course, a membership
 * under a learner) still hangs off the record: the record stands in `org` and its current
 * incarnation began no later than the child (docs/event-core.md "What hangs off a record").
 */
export function holdsChild(state: { record: { org: string } | null; since: Place | null }, org: string, born: Place): boolean {
  return state.record !== null && state.record.org === org && state.since !== null && placeOrder(born, state.since) >= 0;
}
