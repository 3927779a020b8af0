import { MongoServerError } from 'mongodb';

/** MongoDB's E11000: a unique index (or `_id`) refused a write. */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === 11000;
}

/** The driver's way of saying the database cannot be reached (selection, network, pool, timeout). */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return /^Mongo(ServerSelection|Network|NetworkTimeout|PoolCleared|OperationTimeout|TopologyClosed|NotConnected)Error$/.test(err.name);
}

/** A client closed on purpose (shutdown): it will not come back, so retrying is pointless. */
export function isClientClosed(err: unknown): boolean {
  return err instanceof Error && /^Mongo(TopologyClosed|NotConnected)Error$/.test(err.name);
}
