import type { Db } from 'mongodb';
import { COLLECTIONS } from '../src/db/collections';

/**
 * Whether the stack is idle, measured rather than assumed: for `ms`, this process reads one
 * user by `_id` after another and counts the reads. A stack still busy (a service working
 * through requests a finished row abandoned, a consumer's backlog) answers far fewer.
 */
export async function probeRate(db: Db, userIds: readonly number[], ms = 1000): Promise<number> {
  const users = db.collection<{ _id: string }>(COLLECTIONS.users);
  const end = Date.now() + ms;
  let reads = 0;
  while (Date.now() < end) {
    await users.findOne({ _id: String(userIds[reads % userIds.length]) });
    reads++;
  }
  return reads / (ms / 1000);
}

/**
 * Waits (up to `maxMs`) until a probe of `probeMs` reads at least `share` of the idle rate
 * measured before the first row. Returns the last probe's share of it: a row that starts below the share says so.
 */
export async function waitUntilIdle(db: Db, userIds: readonly number[], idleRate: number, share = 0.7, maxMs = 60_000, probeMs = 1000): Promise<number> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const ratio = (await probeRate(db, userIds, probeMs)) / idleRate;
    if (ratio >= share || Date.now() > deadline) return ratio;
  }
}
