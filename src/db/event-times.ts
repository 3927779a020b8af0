import type { Db } from 'mongodb';
import { COLLECTIONS, type EventTimeDoc } from './collections';
import { isDuplicateKey } from './driver-errors';

/**
 * The time an event without `time` is ordered by: the earliest Kafka timestamp known for it, kept
 * by the event's identity (`source` and `id`, hashed: eventKey) and only ever lowered. A record of
 * the same event with a later timestamp (a producer's retry, a copy on another topic) takes the
 * earlier one, so the record's own memory of identities sees the same event. One with an earlier
 * timestamp lowers it and says from what (`was`): the event, placed at that later time, is placed
 * again (versioned-records.ts `replaceEarlier`). One small document per such event, kept: events
 * that carry `time` (every Open edX event-bus event does) never come here.
 */
export async function earliestTimeOf(db: Db, eventId: string, time: string): Promise<{ time: string; was: string | null }> {
  const times = db.collection<EventTimeDoc>(COLLECTIONS.eventTimes);
  for (let round = 0; round < 3; round++) {
    try {
      const before = await times.findOneAndUpdate({ _id: eventId }, { $min: { time } }, { upsert: true, returnDocument: 'before' });
      if (!before) return { time, was: null };
      return before.time > time ? { time, was: before.time } : { time: before.time, was: null };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err; // two first records at once: the other one's insert won, lower it again
    }
  }
  throw new Error(`the earliest time of event ${eventId} could not be read`);
}

/** The earliest Kafka timestamp known for an event without `time` now (null: none recorded). */
export async function knownTimeOf(db: Db, eventId: string): Promise<string | null> {
  return (await db.collection<EventTimeDoc>(COLLECTIONS.eventTimes).findOne({ _id: eventId }))?.time ?? null;
}
