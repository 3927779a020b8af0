import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { type ChildIntentDoc, COLLECTIONS, MAJORITY } from './collections';

/** The intents of children under way (collections.ts `ChildIntentDoc`): small, only what is being written now. */
export function childIntents(db: Db) {
  const intents = db.collection<ChildIntentDoc>(COLLECTIONS.childIntents, MAJORITY);
  return {
    /** Written before the child: its id closes it. */
    async open(intent: Omit<ChildIntentDoc, '_id' | 'at'>, now = new Date()): Promise<string> {
      const _id = randomUUID();
      await intents.insertOne({ _id, at: now.toISOString(), ...intent });
      return _id;
    },
    async close(id: string): Promise<void> {
      await intents.deleteOne({ _id: id });
    },
    /** Intents written before `cutoff` (an ISO time): children their process left unsettled. */
    abandoned(cutoff: string, limit: number): Promise<ChildIntentDoc[]> {
      return intents
        .find({ at: { $lt: cutoff } })
        .limit(limit)
        .toArray();
    },
  };
}
