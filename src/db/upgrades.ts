import type { AnyBulkWriteOperation, Db } from 'mongodb';
import { COLLECTIONS, type UserDoc } from './collections';
import { UPDATES_PER_COMMAND } from './dialect';
import { versionOf } from './versioned-writes';

interface UpgradeDoc {
  _id: string;
  at: Date;
}

/**
 * One-time changes to records stored by earlier versions of the service, run at start (after the
 * indexes) by every process that writes. Each is idempotent and marked done in `upgrades`, so a
 * start after it reads one document. Cross-organization by nature, like the indexes: they change
 * bookkeeping only, never an organization's data, and record no change.
 */
export async function upgradeStoredRecords(db: Db): Promise<void> {
  const done = db.collection<UpgradeDoc>(COLLECTIONS.upgrades);
  for (const [name, upgrade] of Object.entries(UPGRADES)) {
    if (await done.findOne({ _id: name })) continue;
    await upgrade(db);
    await done.updateOne({ _id: name }, { $setOnInsert: { at: new Date() } }, { upsert: true });
  }
}

/** The bookkeeping of activations an earlier version of the service kept on a user (replaced by the activation log). */
const EARLIER_ACTIVATION_FIELDS = ['act_v', 'act_done', 'act_email', 'act_seen_v', 'act_seen_email', 'deact_v', 'deact_min_v', 'act_min_v'];

const UPGRADES: Record<string, (db: Db) => Promise<void>> = {
  /**
   * A user stored before the activation log was kept (docs/events.md, "Activations"): its past
   * is not known, so it becomes the log's floor: the record's version, open when the learner is
   * active (their activation's rules were applied then, so their next login applies none), closed
   * when inactive (their next activation applies them). The membership the floor covers stands,
   * whoever made it, and no event older than the floor applies the rules.
   */
  'activation-log': async (db) => {
    const users = db.collection<UserDoc>(COLLECTIONS.users);
    const cursor = users.find({ act_log: { $exists: false } }, { projection: { _id: 1, event_time: 1, event_n: 1, is_active: 1 } });
    let batch: AnyBulkWriteOperation<UserDoc>[] = [];
    for await (const user of cursor) {
      const floor_v = versionOf(user);
      batch.push({
        updateOne: {
          filter: { _id: user._id, act_log: { $exists: false } },
          update: {
            $set: { act_log: [], floor_v, floor_open: user.is_active },
            $unset: Object.fromEntries(EARLIER_ACTIVATION_FIELDS.map((k) => [k, ''])),
          },
        },
      });
      if (batch.length === UPDATES_PER_COMMAND) {
        await users.bulkWrite(batch, { ordered: false });
        batch = [];
      }
    }
    if (batch.length > 0) await users.bulkWrite(batch, { ordered: false });
  },
};
