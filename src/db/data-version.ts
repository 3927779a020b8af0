import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { isDuplicateKey } from '../http/errors';
import { COLLECTIONS, type DataVersionDoc } from './collections';

/**
 * Data versions: one document per collection whose `v` changes after every write to it, so a
 * cache in any process sharing the database can check in one read that nothing it holds
 * changed since it read it. Per collection, so that the stream of user events does not
 * throw away what is cached about courses, links and site configurations.
 *
 * Why a fresh UUID and not `$inc`: FerretDB v1 applies updates as read-then-write, so concurrent
 * increments are lost and two writers could leave the counter at a value a reader already saw.
 * A `$set` of a value never used before cannot: whichever concurrent `$set` lands last, the
 * stored value differs from every value read before either write began.
 *
 * The protocol (src/features/access/cache.ts): a writer writes its data, then bumps; a reader
 * reads the version first, then the data, and stamps what it caches with the version it read.
 * An entry is used only while the stored version still equals its stamp. If a write finished
 * before a decision started, its bump did too, so the decision reads a version that differs
 * from the stamp of every entry read before that write.
 */
const versions = (db: Db) => db.collection<DataVersionDoc>(COLLECTIONS.dataVersions);

/**
 * The current version of every collection that has been written (`_id` = collection name), in
 * one read: the collection holds one small document per collection, so reading all of it
 * costs what one primary-key read does.
 */
export async function readDataVersions(db: Db): Promise<Map<string, string>> {
  const docs = await versions(db).find({}).toArray();
  return new Map(docs.map((d) => [d._id, d.v]));
}

/** Marks what caches hold of `collection` stale, in every process. Called after each write (TenantCollection). */
export async function bumpDataVersion(db: Db, collection: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await versions(db).updateOne({ _id: collection }, { $set: { v: randomUUID() } }, { upsert: true });
      return;
    } catch (err) {
      // Two first-ever upserts can race on FerretDB (not atomic): the loser retries as an update.
      if (!isDuplicateKey(err) || attempt >= 3) throw err;
    }
  }
}

/**
 * The bump after a write. If it fails (the database went away between the two), the write may be
 * invisible to caches, so the caller gets the error and the bump is retried in the background
 * until it succeeds. A process killed in that gap leaves caches stale until the next write: the
 * one window this design has (see README, Performance).
 */
export async function bumpAfterWrite(db: Db, collection: string): Promise<void> {
  try {
    await bumpDataVersion(db, collection);
  } catch (err) {
    retryInBackground(db, collection);
    throw err;
  }
}

/** Collections whose bump is being retried, per database: one retry loop each, however many writes failed. */
const retrying = new WeakMap<Db, Set<string>>();

function retryInBackground(db: Db, collection: string): void {
  let pending = retrying.get(db);
  if (!pending) retrying.set(db, (pending = new Set()));
  if (pending.has(collection)) return;
  pending.add(collection);
  const attempt = (delay: number) =>
    setTimeout(() => {
      bumpDataVersion(db, collection).then(
        () => pending.delete(collection),
        (err: Error) => {
          // A client closed on purpose (shutdown) will not come back; anything else may.
          if (/^Mongo(TopologyClosed|NotConnected)Error$/.test(err.name)) pending.delete(collection);
          else attempt(Math.min(delay * 2, 5000));
        },
      );
    }, delay).unref();
  attempt(100);
}
