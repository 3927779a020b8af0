import { createHash } from 'node:crypto';

/**
 * Event times as comparable strings. CloudEvents `time` is RFC 3339 with any offset and any
 * number of fraction digits, so two raw strings do not sort by instant; stored `event_time` is
 * therefore always UTC with exactly nine fraction digits, and plain string comparison (which the
 * database's `$lt` on strings also uses) orders it by instant.
 */
const RFC3339 = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/i;

export function normalizeEventTime(time: string): string {
  const m = RFC3339.exec(time.trim());
  if (!m) throw new RangeError('not an RFC 3339 date-time');
  const [, date, clock, fraction = '', zone] = m;
  const ms = Date.parse(`${date}T${clock}.${fraction.slice(0, 3).padEnd(3, '0')}${zone!.toUpperCase()}`);
  if (Number.isNaN(ms)) throw new RangeError('not an RFC 3339 date-time');
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  return `${iso.slice(0, -1)}${fraction.slice(3, 9).padEnd(6, '0')}Z`;
}

/** A Kafka record timestamp (milliseconds since the epoch, as kafkajs gives it) in the same form. */
export function eventTimeFromMillis(ms: string | number): string {
  return normalizeEventTime(new Date(Number(ms)).toISOString());
}

/** What applying an event did to its record. */
export type ApplyOutcome =
  /** the record now reflects the event */
  | 'applied'
  /** the record already reflected this very event time: a redelivery */
  | 'duplicate'
  /** the record reflects a newer event (or a newer deletion): the event is left out */
  | 'stale';

/**
 * What identifies one event and orders it: its normalized `time` and its identity (`source` and
 * `id`, hashed to a short fixed-size key by eventKey). A bare time (the import, which has no
 * event ids) is its own identity: a second line of the same time is a duplicate.
 */
export interface EventStamp {
  time: string;
  id: string;
}

export const asStamp = (at: string | EventStamp): EventStamp => (typeof at === 'string' ? { time: at, id: `t:${at}` } : at);

/** The identity of a CloudEvent: `source` and `id` together (docs/events.md: the same event is the same pair). */
export function eventKey(source: string, id: string): string {
  return createHash('sha256').update(source).update('\0').update(id).digest('base64url').slice(0, 22);
}

/** An event's version on a record (src/db/versioned-writes.ts). */
export { version } from '../db/versioned-writes';
