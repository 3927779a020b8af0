import type { Db } from 'mongodb';
import { COLLECTIONS, type LeaseDoc, MAJORITY } from './collections';
import { isDuplicateKey } from './driver-errors';

/**
 * A lease: one holder at a time per database, until it expires unless renewed; then anyone may
 * take it. Times are the holders' clocks, so clocks must agree to well within the lease's length.
 * `seq` is a counter only the holder moves, in the same atomic update that proves it still holds
 * the lease: the change relay numbers its events from it, so numbers never go back, whoever holds.
 */
const leases = (db: Db) => db.collection<LeaseDoc>(COLLECTIONS.leases, MAJORITY);

/** Takes the lease if it is free, expired or already ours; false when another holds it. */
export async function acquireLease(db: Db, name: string, owner: string, ttlMs: number): Promise<boolean> {
  const now = Date.now();
  try {
    await leases(db).updateOne(
      { _id: name, $or: [{ owner }, { expires: { $lte: new Date(now) } }] },
      { $set: { owner, expires: new Date(now + ttlMs) }, $setOnInsert: { seq: 0 } },
      { upsert: true },
    );
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false; // held by another: the upsert collided with it
    throw err;
  }
}

/**
 * Extends our lease and moves its counter by `reserve`; returns the counter after the move (the
 * numbers `seq - reserve + 1 … seq` are ours), or null when the lease is no longer ours.
 */
export async function renewLease(db: Db, name: string, owner: string, ttlMs: number, reserve = 0): Promise<number | null> {
  const now = Date.now();
  const doc = await leases(db).findOneAndUpdate(
    { _id: name, owner, expires: { $gt: new Date(now) } },
    { $set: { expires: new Date(now + ttlMs) }, $inc: { seq: reserve } },
    { returnDocument: 'after' },
  );
  return doc ? doc.seq : null;
}

/** Gives the lease up at once (a clean stop), so another process need not wait for it to expire. */
export async function releaseLease(db: Db, name: string, owner: string): Promise<void> {
  await leases(db).updateOne({ _id: name, owner }, { $set: { expires: new Date(0) } });
}
