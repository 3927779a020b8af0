import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { COLLECTIONS, MAJORITY, type WriteIntentDoc } from './collections';

/** The intents of writes under way (collections.ts `WriteIntentDoc`): small, only what is being written now. */
export function writeIntents(db: Db) {
  const intents = db.collection<WriteIntentDoc>(COLLECTIONS.writeIntents, MAJORITY);
  return {
    /** Written before the write: its id closes it. */
    async open(intent: Omit<WriteIntentDoc, '_id' | 'at'>, now = new Date()): Promise<string> {
      const _id = randomUUID();
      await intents.insertOne({ _id, at: now.toISOString(), ...intent });
      return _id;
    },
    async close(id: string): Promise<void> {
      await intents.deleteOne({ _id: id });
    },
    /** Intents written before `cutoff` (an ISO time): writes their process left half done. */
    abandoned(cutoff: string, limit: number): Promise<WriteIntentDoc[]> {
      return intents
        .find({ at: { $lt: cutoff } })
        .limit(limit)
        .toArray();
    },
  };
}
