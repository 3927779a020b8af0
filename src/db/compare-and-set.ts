import type { Collection, Document, OptionalUnlessRequiredId } from 'mongodb';
import { isDuplicateKey } from './driver-errors';

/**
 * The event core's one write (docs/event-core.md, "Writes"): `next` replaces the record if it is
 * still the one read (`read`, null: there was none), compared by its revision `rev`. False when
 * another write came first: the caller reads and folds again. `derived`: fields written apart
 * (list facts, list-facts.ts), left as they are.
 */
export async function writeIfUnchanged<T extends Document & { _id: string; rev?: number }>(
  records: Collection<T>,
  read: T | null,
  next: T,
  derived: readonly (keyof T)[],
): Promise<boolean> {
  if (read === null) {
    try {
      await records.insertOne(next as OptionalUnlessRequiredId<T>);
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }
  const fields: Document = { ...next };
  delete fields._id;
  for (const key of derived) delete fields[key as string];
  const result = await records.updateOne({ _id: next._id, rev: read.rev ?? { $exists: false } } as never, { $set: fields } as never);
  return result.matchedCount === 1;
}
