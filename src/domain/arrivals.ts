import { type ApplyOutcome, asStamp, type EventStamp } from './event-time';
import { type Arrival, type Compaction, type EntryBase, HISTORY_BOUNDS, type History } from './record-history';

/**
 * What learners and courses share between an event's stamp and their histories: an entry's
 * identity and place, and what an arrival counts as.
 */

/** An event's identity and place, from its stamp: the exact `source` and `id` of a CloudEvent; a bare time (the import) is its own identity. */
export function entryOf(at: string | EventStamp): { stamp: EventStamp; base: Omit<EntryBase, 'seq'> } {
  const stamp = asStamp(at);
  const identity = stamp.identity ?? { source: 'stamp', id: stamp.id };
  return { stamp, base: { ...identity, at: stamp.time, timed: !stamp.provisional } };
}

/**
 * Whether an arrival leaves the record as it was (nothing to write, only a projection to finish):
 * a duplicate that moved nothing, or a stale event with `time`. A stale event without `time` is
 * written all the same: its identity, in the floor, makes a later Kafka record of it the same
 * event, placed at its earliest timestamp.
 */
export const writesNothing = <H>(history: H, before: H, arrival: Arrival, base: Pick<EntryBase, 'timed'>) =>
  history === before || (arrival === 'stale' && base.timed);

/** A late entry is folded in its place, and counted `stale` as an event older than the record always was. */
export const OUTCOME: Record<Arrival, ApplyOutcome> = { applied: 'applied', late: 'stale', duplicate: 'duplicate', stale: 'stale' };

/**
 * A record of the shape before histories remembers its newest events by hashed identity only:
 * `legacy_ids` once upgraded, `event_ids` when read before its upgrade. An identity has one
 * event, whatever Kafka timestamp a record of it without `time` carries now.
 */
export const isLegacyDuplicate = (doc: { legacy_ids?: string[]; event_ids?: string[] } | null, stamp: EventStamp) =>
  !!(doc?.legacy_ids ?? doc?.event_ids)?.includes(stamp.id);

/** The hashed identities a record of the earlier shape carries on: the upgrade's, or its own. */
export const legacyIdsOf = (doc: { legacy_ids?: string[]; event_ids?: string[] } | null) => doc?.legacy_ids ?? doc?.event_ids;

/** The stored history of a record, typed as its fold's (storage keeps entries as they are). */
export const storedHistory = <E extends EntryBase, S>(h: unknown): History<E, S> => h as History<E, S>;

let bounds: Compaction = HISTORY_BOUNDS;

/** The bounds every write path compacts with: the process's settings (EVENT_HISTORY_DAYS, EVENT_HISTORY_ENTRIES). */
export const historyBounds = (): Compaction => bounds;

/** Set once at start from the settings (src/runtime.ts, `cag`): one process, one set of bounds. */
export function configureHistoryBounds(settings: { EVENT_HISTORY_DAYS: number; EVENT_HISTORY_ENTRIES: number }): void {
  bounds = { horizonMs: settings.EVENT_HISTORY_DAYS * 24 * 3600 * 1000, maxEntries: settings.EVENT_HISTORY_ENTRIES };
}
