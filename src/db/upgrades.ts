import type { Db } from 'mongodb';
import { COLLECTIONS, type UserDoc } from './collections';

/**
 * The `act_v` of an activation whose rules were applied before users carried activation
 * bookkeeping: it sorts before any event's version (`time#n`; '#' before the time's '-'), so a later
 * deactivation is newer and the activation after it applies the rules again (docs/events.md).
 */
export const ACTIVATION_BEFORE_BOOKKEEPING = '0000#0000';

/**
 * The `act_min_v` that says no activation before the first deactivation may apply the rules late
 * (docs/events.md): a retirement or a move deleted what they made, or the record's history
 * before its first deactivation is not known. Sorts before any event's version, like the above.
 */
export const ACTIVATION_PERIODS_SETTLED = ACTIVATION_BEFORE_BOOKKEEPING;

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

const UPGRADES: Record<string, (db: Db) => Promise<void>> = {
  /**
   * An active user stored before activations were recorded has neither `act_v` nor `deact_v`,
   * and the service of then applied the rules at its activation. Without a mark, its next login
   * would count as an activation not yet applied and undo an administrator's removal.
   */
  'activations-recorded': async (db) => {
    await db
      .collection<UserDoc>(COLLECTIONS.users)
      .updateMany(
        { is_active: true, act_v: { $exists: false }, deact_v: { $exists: false } },
        { $set: { act_v: ACTIVATION_BEFORE_BOOKKEEPING, act_done: true } },
      );
  },
  /**
   * A user stored before `deact_min_v` and `act_min_v` were kept: its oldest deactivation and
   * claimed activation are not known, so no late activation before its first deactivation applies
   * the rules (they may have been applied, and an administrator may have changed the result since).
   */
  'first-activation-period-recorded': async (db) => {
    await db.collection<UserDoc>(COLLECTIONS.users).updateMany(
      {
        act_min_v: { $exists: false },
        $or: [{ act_v: { $exists: true } }, { deact_v: { $exists: true } }],
      },
      { $set: { act_min_v: ACTIVATION_PERIODS_SETTLED } },
    );
  },
};
