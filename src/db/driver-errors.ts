import { MongoError, MongoErrorLabel, MongoServerError, MongoWriteConcernError } from 'mongodb';

/** MongoDB's E11000: a unique index (or `_id`) refused a write. */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === 11000;
}

/** `write`, with the refusal of a unique index (E11000) answered as `refusal()` says. */
export async function refusingDuplicates<R>(write: () => Promise<R>, refusal: () => Error): Promise<R> {
  try {
    return await write();
  } catch (err) {
    if (isDuplicateKey(err)) throw refusal();
    throw err;
  }
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

/**
 * Server error codes that pass by themselves: the node stepping down, shutting down, or not
 * reachable from the one that answered, and a write concern not satisfied in time. The driver's
 * own list of retryable codes (not exported by it), plus WriteConcernFailed (64, a `wtimeout`).
 */
const TRANSIENT_CODES = new Set([6, 7, 64, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);

/**
 * A server error that says "try again": a transient code, a write-concern error, or one the
 * server or the driver labelled retryable. A replica set electing a new primary answers these
 * for seconds; they are a dependency unavailable, never a reason to dead-letter an event.
 */
export function isTransientServerError(err: unknown): boolean {
  if (!(err instanceof MongoError)) return false;
  const labels = [
    MongoErrorLabel.RetryableWriteError,
    MongoErrorLabel.TransientTransactionError,
    MongoErrorLabel.ResetPool,
    MongoErrorLabel.PoolRequestedRetry,
  ];
  if (labels.some((label) => err.hasErrorLabel(label))) return true;
  if (err instanceof MongoWriteConcernError) return true;
  const concern = (err as { writeConcernError?: { code?: unknown } }).writeConcernError;
  if (concern !== undefined) return true;
  return typeof err.code === 'number' && TRANSIENT_CODES.has(err.code);
}
