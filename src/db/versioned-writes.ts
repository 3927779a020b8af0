import type { Document } from 'mongodb';
import type { EventVersion } from './collections';

/**
 * The compare-and-set of records filled from events (docs/events.md, "one record at a time"):
 * every write that depends on a record's version names that version in its filter, so a write
 * that lost a race to another event (another topic, another process) matches nothing and its
 * caller reads again. No transaction: one document's update is atomic on MongoDB and FerretDB
 * alike. A batch (many records) puts the same condition in each of its bulk operations.
 */

/**
 * An event's version on a record: its time and its place among the events of that time the record
 * applied (`time#n`, n from 1), which sort as strings. A stale event, never applied, is `time#0`
 * (a learner's activation log places it late: lateVersion).
 */
export const version = (time: string, n: number) => `${time}#${String(Math.min(n, 9999)).padStart(4, '0')}`;

/**
 * The version of a late event (one that arrived after the record moved past its time): it
 * comes after every event of its time the record applied (`time#~` sorts after every
 * `time#n`), as the tie rule places a late event of a tied time (docs/events.md). `arrival`
 * (a learner's log count, which every change raises) orders the late events of one record
 * among themselves as they arrived: `time#~0000000005` before `time#~0000000006`.
 */
export const lateVersion = (time: string, arrival?: number) => `${time}#~${arrival === undefined ? '' : String(arrival).padStart(10, '0')}`;

/** The time part of a version (`version` or `lateVersion`). */
export const versionTime = (v: string) => v.slice(0, v.lastIndexOf('#'));

/** Whether `v` is a late event's version (lateVersion). */
export const isLate = (v: string) => v.includes('#~');

/** The version a record reflects (its newest event's). */
export const versionOf = (v: EventVersion) => version(v.event_time, v.event_n ?? 1);

/** The filter condition "the record is still at version `v`": its time and its count of events of that time. */
export function atVersion(v: EventVersion): Document {
  // A record written before counts were kept has none: it matches "no count" only.
  return { event_time: v.event_time, event_n: v.event_n ?? { $exists: false } };
}

/** The filter of one record `_id` still at version `v` (null: the record must not exist). */
export function recordAtVersion(id: string, v: EventVersion): Document {
  return { _id: id, ...atVersion(v) };
}
