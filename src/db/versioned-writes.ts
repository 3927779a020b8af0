import type { Document } from 'mongodb';
import type { EventVersion } from './collections';

/**
 * The compare-and-set of records filled from events (docs/events.md, "one record at a time"):
 * every write that depends on a record's version names that version in its filter, so a write
 * that lost a race to another event (another topic, another process) matches nothing and its
 * caller reads again. No transaction: one document's update is atomic on MongoDB and FerretDB
 * alike. A batch (many records) puts the same condition in each of its bulk operations.
 */

/** The filter condition "the record is still at version `v`": its time and its count of events of that time. */
export function atVersion(v: EventVersion): Document {
  // A record written before counts were kept has none: it matches "no count" only.
  return { event_time: v.event_time, event_n: v.event_n ?? { $exists: false } };
}

/** The filter of one record `_id` still at version `v` (null: the record must not exist). */
export function recordAtVersion(id: string, v: EventVersion): Document {
  return { _id: id, ...atVersion(v) };
}
