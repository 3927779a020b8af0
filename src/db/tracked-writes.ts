import type {
  AnyBulkWriteOperation,
  Collection,
  Db,
  Document,
  Filter,
  FindOneAndUpdateOptions,
  OptionalUnlessRequiredId,
  UpdateFilter,
  UpdateOptions,
  UpdateResult,
  WithId,
} from 'mongodb';
import { recordAfterWrite } from './change-log';
import { COLLECTIONS, type CollectionName, type TenantDoc } from './collections';
import { refusedAsDuplicates, UPDATES_PER_COMMAND } from './dialect';
import { isDuplicateKey } from './driver-errors';
import { dropIntent, INTENT_GRACE_MS, type Intent, intentPolicy, narrowIntent, openIntent, reopenIntent, signalDone, TRACKED } from './outbox';

/**
 * Collections no cache reads: the search n-grams, derived from users and courses and rewritten
 * with them. Recording their writes would add a change-log write per write for nobody.
 */
const UNRECORDED: ReadonlySet<CollectionName> = new Set([COLLECTIONS.userGrams, COLLECTIONS.courseGrams]);

/** `_id`s deleted per round of a deleteMany: each round reads them, deletes them and records them. */
const DELETE_BATCH = 1000;

/** What a tracked write knows before it runs: the records it may change and, when audited, how they are. */
interface Plan {
  keys: string[];
  before?: (Document | null)[];
}

/** The record a tracked write aims at, found before it runs (null: nothing matches, nothing to do). */
interface Target<T> {
  key: string;
  before: T | null;
}

const NO_MATCH: UpdateResult = { acknowledged: true, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedId: null };

/**
 * The tracked-write protocol. Every write passes here, and every write that changed something
 * records which records it changed in the change sequence (src/db/change-log.ts), after writing,
 * also when it failed part-way: this is the one place that keeps caches of every process honest.
 *
 * Writes of the tracked collections (src/db/outbox.ts) also open an outbox intent first, naming
 * the records they may change, so a change cannot be committed and then forgotten by a process
 * that dies before publishing it. That needs the records' `_id`s before the write: a filter that
 * names no `_id` is resolved by one read first, and the write then aims at what it found.
 *
 * Scoping is the Tenant's (src/db/tenant.ts): `scope` adds the organization to every filter and
 * `org` is put in every inserted document.
 */
export abstract class TrackedCollection<T extends TenantDoc> {
  protected readonly inner: Collection<T>;

  constructor(
    protected readonly db: Db,
    protected readonly name: CollectionName,
    readonly org: string,
  ) {
    this.inner = db.collection<T>(name);
  }

  /** The filter limited to this organization. */
  protected abstract scope(filter: Filter<T>): Filter<T>;

  /** Records the change (naming the intent the write carried out) for caches and the relay. */
  private async changed(keys: (string | null)[], intent: Intent | null): Promise<void> {
    if (UNRECORDED.has(this.name)) return;
    const i = intent ? { i: intent.id } : {};
    await recordAfterWrite(
      this.db,
      this.name,
      keys.map((k) => ({ k, o: this.org, ...i })),
    );
    if (intent) signalDone(this.db);
  }

  /**
   * Records in the change sequence that these records may have changed, without writing them: a
   * redelivered event (a duplicate) re-announces what its first delivery wrote, in case that
   * process died between the write and its change record and left other processes' caches stale.
   */
  announce(keys: string[]): Promise<void> {
    return this.changed(keys, null);
  }

  /**
   * Opens the intent (when `plan`), runs the write, then records the `_id`s it changed (null: it
   * may have changed any). A write that a unique key refused changed nothing: its intent goes.
   * One that failed otherwise may have written part of its work: it records "anything", and its
   * intent stays for the relay to resolve after the grace period (the write may still land).
   */
  private async write<R>(plan: Plan | null, operation: () => Promise<R>, changedKeys: (result: R) => (string | null)[]): Promise<R> {
    let intent = plan && plan.keys.length > 0 ? await openIntent(this.db, this.name, this.org, plan.keys, plan.before) : null;
    let result: R;
    try {
      result = await operation();
    } catch (err) {
      if (isDuplicateKey(err)) {
        if (intent) await dropIntent(this.db, intent).catch(() => undefined);
      } else {
        await this.changed([null], null).catch(() => undefined); // report the write's own error
      }
      throw err;
    }
    const keys = changedKeys(result);
    if (keys.length === 0) {
      if (intent) await dropIntent(this.db, intent).catch(() => undefined); // else resolved after the grace, as unchanged
      return result;
    }
    // The relay may have resolved an intent this old already, reading the record before the
    // write landed: a fresh one, written after the write, makes sure the change is published.
    if (intent && Date.now() - intent.at > INTENT_GRACE_MS / 2) intent = await reopenIntent(this.db, intent);
    await this.changed(keys, intent);
    return result;
  }

  /** The `_id` a filter names, if it names exactly one. */
  private static keyOf(filter: Document): string | null {
    return typeof filter._id === 'string' ? filter._id : null;
  }

  /** This organization's record of `_id` `key`, as it is (null: none here). One key lookup. */
  private async current(key: string): Promise<T | null> {
    const doc = (await this.inner.findOne({ _id: key } as Filter<T>)) as T | null;
    return doc && doc.org === this.org ? doc : null;
  }

  /** For a tracked write: the record `filter` aims at (one read when it names no `_id`). */
  private async target(filter: Filter<T>, audit: boolean, upsert = false): Promise<Target<T> | null> {
    const key = TrackedCollection.keyOf(filter);
    if (key !== null) return { key, before: audit ? await this.current(key) : null };
    if (upsert) throw new Error(`an upsert of ${this.name} must name its _id`);
    const doc = (await this.inner.findOne(this.scope(filter))) as T | null;
    return doc && { key: doc._id, before: doc };
  }

  private plan(policy: { audit: boolean }, keys: string[], before: (T | null)[]): Plan {
    return { keys, ...(policy.audit ? { before } : {}) };
  }

  /** Updates every match in one command; records "anything may have changed" when it changed something. Untracked collections only. */
  updateMany(filter: Filter<T>, update: UpdateFilter<T>) {
    return this.write(
      null,
      () => this.inner.updateMany(this.scope(filter), update),
      (r) => (r.modifiedCount > 0 ? [null] : []),
    );
  }

  /**
   * Many conditional upserts in one command (unordered): each `{filter, set}` updates the
   * document its filter matches or inserts one (with the filter's equalities); one whose filter
   * misses an existing `_id` is refused by the key and skipped, which is how a caller says
   * "unless a newer version is there". Other failures are thrown. Records nothing: for the
   * unrecorded collections only.
   */
  async upsertEach(entries: { filter: Filter<T>; set: Partial<T> }[]): Promise<void> {
    if (entries.length === 0) return;
    const ops = entries.map((e) => ({ updateOne: { filter: this.scope(e.filter), update: { $set: e.set }, upsert: true } }) as AnyBulkWriteOperation<T>);
    for (let i = 0; i < ops.length; i += UPDATES_PER_COMMAND) {
      try {
        await this.inner.bulkWrite(ops.slice(i, i + UPDATES_PER_COMMAND), { ordered: false });
      } catch (err) {
        if (refusedAsDuplicates(err) === null) throw err;
      }
    }
  }

  /**
   * Many single-document updates in one unordered command, each aimed at one `_id` (a
   * compare-and-set names the version it read in its filter); records the `_id`s as changed
   * when any matched. Returns how many matched: fewer than asked means some lost a race, and
   * the caller reads them again. Untracked collections only (an outbox intent would have to name
   * each record's state before the write).
   */
  async updateEach(entries: { filter: Filter<T>; update: UpdateFilter<T> }[]): Promise<number> {
    if (entries.length === 0) return 0;
    if (TRACKED.has(this.name)) throw new Error(`${this.name} is tracked: update it record by record`);
    const keys = entries.map((e) => TrackedCollection.keyOf(e.filter));
    if (keys.some((k) => k === null)) throw new Error('updateEach: every filter names its _id');
    const ops = entries.map((e) => ({ updateOne: { filter: this.scope(e.filter), update: e.update } }) as AnyBulkWriteOperation<T>);
    const matched = await this.write(
      null,
      async () => {
        let n = 0;
        for (let i = 0; i < ops.length; i += UPDATES_PER_COMMAND)
          n += (await this.inner.bulkWrite(ops.slice(i, i + UPDATES_PER_COMMAND), { ordered: false })).matchedCount;
        return n;
      },
      (n) => (n > 0 ? keys : []),
    );
    return matched;
  }

  /**
   * Updates one document's fields that no cache, list or change event reads (an event's own
   * bookkeeping, such as a user's activation claim): the change sequence is not moved for them,
   * so the write is one command. True when a document matched (`many`: every match is updated).
   * Untracked collections only.
   */
  async updateBookkeeping(filter: Filter<T>, update: UpdateFilter<T>, options: { many?: boolean } = {}): Promise<boolean> {
    if (TRACKED.has(this.name)) throw new Error(`${this.name} is tracked: its writes are recorded`);
    const r = options.many ? await this.inner.updateMany(this.scope(filter), update) : await this.inner.updateOne(this.scope(filter), update);
    return r.matchedCount > 0;
  }

  async insertOne(doc: Omit<T, 'org'>): Promise<T> {
    const full = { ...doc, org: this.org } as T;
    const policy = intentPolicy(this.db, this.name);
    // A new record had no "before"; an existing `_id` makes the insert fail, and its intent go.
    const plan = policy && this.plan(policy, [full._id], [null]);
    await this.write(
      plan,
      () => this.inner.insertOne(full as OptionalUnlessRequiredId<T>),
      () => [full._id],
    );
    return full;
  }

  /**
   * Inserts what it can of `docs` (unordered: a duplicate `_id` skips that document, not the
   * rest) and returns the `_id`s refused as duplicates. Any other failure is thrown.
   */
  async insertMany(docs: Omit<T, 'org'>[]): Promise<Set<string>> {
    if (docs.length === 0) return new Set();
    const full = docs.map((d) => ({ ...d, org: this.org }) as OptionalUnlessRequiredId<T>);
    const keys = docs.map((d) => d._id);
    const policy = intentPolicy(this.db, this.name);
    const intent = policy && (await openIntent(this.db, this.name, this.org, keys, policy.audit ? keys.map(() => null) : undefined));
    try {
      await this.inner.insertMany(full, { ordered: false });
      await this.changed(keys, intent);
      return new Set();
    } catch (err) {
      const duplicates = refusedAsDuplicates(err);
      const refused = new Set((duplicates ?? []).map((i) => keys[i]!));
      if (intent && duplicates) {
        const inserted = keys.filter((k) => !refused.has(k));
        // The intent names only what this call created: an existing record is not its change.
        await (inserted.length === 0 ? dropIntent(this.db, intent) : narrowIntent(this.db, intent, inserted)).catch(() => undefined);
        if (inserted.length > 0) await this.changed(inserted, intent).catch(() => undefined);
      } else {
        await this.changed(keys, null).catch(() => undefined);
      }
      if (!duplicates) throw err;
      return refused;
    }
  }

  async updateOne(filter: Filter<T>, update: UpdateFilter<T>, options?: UpdateOptions): Promise<UpdateResult<T>> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit, options?.upsert === true));
    if (policy && !target) return NO_MATCH as UpdateResult<T>;
    const aimed = target ? ({ ...filter, _id: target.key } as Filter<T>) : filter;
    return this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.updateOne(this.scope(aimed), update, options),
      (r) => {
        if (r.upsertedId !== null && r.upsertedId !== undefined) return [String(r.upsertedId)];
        return r.modifiedCount > 0 ? [TrackedCollection.keyOf(aimed)] : [];
      },
    );
  }

  async findOneAndUpdate(filter: Filter<T>, update: UpdateFilter<T>, options: FindOneAndUpdateOptions = {}): Promise<WithId<T> | null> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit, options.upsert === true));
    if (policy && !target) return null;
    const aimed = target ? ({ ...filter, _id: target.key } as Filter<T>) : filter;
    return this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.findOneAndUpdate(this.scope(aimed), update, { returnDocument: 'after', ...options }),
      (doc) => (doc ? [doc._id as string] : []),
    );
  }

  /**
   * Updates the match or, when nothing matches, inserts (with the filter's equalities, `org`
   * among them); says which. One atomic command. A filter that misses a record whose `_id` it
   * names collides with it on insert: E11000, for the caller to read as "exists, not matching".
   */
  async upsertOne(filter: Filter<T>, update: UpdateFilter<T>): Promise<{ doc: T; inserted: boolean }> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit, true));
    const result = await this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.findOneAndUpdate(this.scope(filter), update, { upsert: true, returnDocument: 'after', includeResultMetadata: true }),
      (r) => (r.value ? [r.value._id as string] : []),
    );
    return { doc: result.value as T, inserted: result.lastErrorObject?.updatedExisting === false };
  }

  async findOneAndDelete(filter: Filter<T>): Promise<WithId<T> | null> {
    const policy = intentPolicy(this.db, this.name);
    const target = policy && (await this.target(filter, policy.audit));
    if (policy && !target) return null;
    const aimed = target ? ({ ...filter, _id: target.key } as Filter<T>) : filter;
    return this.write(
      policy && target && this.plan(policy, [target.key], [target.before]),
      () => this.inner.findOneAndDelete(this.scope(aimed)),
      (doc) => (doc ? [doc._id as string] : []),
    );
  }

  async deleteOne(filter: Filter<T>): Promise<{ deletedCount: number }> {
    const doc = await this.findOneAndDelete(filter);
    return { deletedCount: doc ? 1 : 0 };
  }

  /**
   * Deletes every match, a batch at a time: read the `_id`s, delete those that still match,
   * record them. So every deleted record is named in the change sequence (and in its intent),
   * however it was found. A filter that names `_id` itself is one plain delete.
   */
  async deleteMany(filter: Filter<T>): Promise<{ deletedCount: number }> {
    const policy = intentPolicy(this.db, this.name);
    if (typeof filter._id === 'string' || (!policy && '_id' in filter)) {
      const key = TrackedCollection.keyOf(filter);
      const plan = policy && key !== null ? this.plan(policy, [key], [policy.audit ? await this.current(key) : null]) : null;
      const r = await this.write(
        plan,
        () => this.inner.deleteMany(this.scope(filter)),
        (r) => (r.deletedCount > 0 ? [key] : []),
      );
      return { deletedCount: r.deletedCount };
    }
    let deletedCount = 0;
    for (;;) {
      // Audited: whole records, for the intent's "before"; else their `_id`s.
      const docs = (await this.inner
        .find(this.scope(filter), policy?.audit ? {} : { projection: { _id: 1 } })
        .limit(DELETE_BATCH)
        .toArray()) as T[];
      const ids = docs.map((d) => d._id);
      if (ids.length === 0) return { deletedCount };
      const r = await this.write(
        policy && this.plan(policy, ids, docs),
        () => this.inner.deleteMany(this.scope({ ...filter, _id: { $in: ids } } as Filter<T>)),
        (r) => (r.deletedCount > 0 ? ids : []),
      );
      deletedCount += r.deletedCount;
    }
  }
}
