import { createHash } from 'node:crypto';

/**
 * Event times as comparable strings. CloudEvents `time` is RFC 3339 with any offset and any
 * number of fraction digits, so two raw strings do not sort by instant; stored `event_time` is
 * therefore always UTC, years 0000 to 9999, with exactly nine fraction digits, and plain string
 * comparison (which the database's `$lt` on strings also uses) orders it by instant.
 *
 * At the edges (docs/decisions.md): a leap second (`:60`) is the last instant of its minute
 * (`:59.999999999`); a time whose UTC instant falls outside years 0000 to 9999, or with a
 * non-zero digit after the ninth fraction digit, cannot be stored in that form and is refused
 * (UnrepresentableTime: the event goes to the DLQ with that reason), never stored misordered.
 */
const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:(Z)|([+-])(\d\d):(\d\d))$/i;

/** A valid RFC 3339 time the service cannot order exactly: the event is dead-lettered with this reason. */
export class UnrepresentableTime extends RangeError {}

const daysIn = (year: number, month: number) => new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !isLeapYear(year) ? 1 : 0);
const isLeapYear = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

export function normalizeEventTime(time: string): string {
  const m = RFC3339.exec(time.trim());
  if (!m) throw new RangeError('not an RFC 3339 date-time');
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const fraction = m[7] ?? '';
  const [offsetHours, offsetMinutes] = [Number(m[10] ?? 0), Number(m[11] ?? 0)];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) {
    throw new RangeError('not an RFC 3339 date-time');
  }
  if (/[1-9]/.test(fraction.slice(9))) throw new UnrepresentableTime('time has a fraction finer than nanoseconds, which the service cannot order exactly');
  const leap = second === 60;
  // Date.UTC reads years 0-99 as 1900-1999: the year is set on its own.
  const local = new Date(Date.UTC(2000, month - 1, day, hour, minute, leap ? 59 : second));
  local.setUTCFullYear(year);
  const offset = m[8] ? 0 : (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  const iso = new Date(local.getTime() - offset * 60_000).toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ, or ±YYYYYY-… outside 0000-9999
  if (!/^\d{4}-/.test(iso)) throw new UnrepresentableTime('time falls outside the years 0000 to 9999 UTC, which the service cannot order');
  return `${iso.slice(0, 19)}.${leap ? '999999999' : fraction.slice(0, 9).padEnd(9, '0')}Z`;
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
  /** The event's exact identity (a CloudEvent's `source` and `id`), where the event core keeps it whole. */
  identity?: { source: string; id: string };
  /** The event has no `time`: `time` is the earliest Kafka timestamp known for it so far, which an earlier record of it may lower. */
  provisional?: boolean;
}

export const asStamp = (at: string | EventStamp): EventStamp => (typeof at === 'string' ? { time: at, id: `t:${at}` } : at);

/** The identity of a CloudEvent: `source` and `id` together (docs/events.md: the same event is the same pair). */
export function eventKey(source: string, id: string): string {
  return createHash('sha256').update(source).update('\0').update(id).digest('base64url').slice(0, 22);
}
