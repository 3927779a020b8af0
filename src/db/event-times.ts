import type { Db } from 'mongodb';
import { COLLECTIONS, type EventTimeDoc } from './collections';
import { isDuplicateKey } from './driver-errors';

/**
 * The time an event without `time` is ordered by: the Kafka timestamp of the first record that
 * carried it, kept by the event's identity (`source` and `id`, hashed: eventKey). Any later
 * record of the same event (a producer's retry, a copy on another topic) has another timestamp;
 * it takes the first one's, so the record's own memory of identities (docs/events.md) sees the
 * same event, not a newer one. One small document per such event, kept: events that carry
 * `time` (every Open edX event-bus event does) never come here.
 */
export async function firstTimeOf(db: Db, eventId: string, time: string): Promise<string> {
  const times = db.collection<EventTimeDoc>(COLLECTIONS.eventTimes);
  for (let round = 0; round < 3; round++) {
    try {
      const doc = await times.findOneAndUpdate({ _id: eventId }, { $setOnInsert: { time } }, { upsert: true, returnDocument: 'after' });
      if (doc) return doc.time;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err; // two first records at once: the other one's insert won, read it
    }
  }
  throw new Error(`the first time of event ${eventId} could not be read`);
}
