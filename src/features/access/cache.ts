import type { Db } from 'mongodb';
import { type CollectionChanges, readChangeLog } from '../../db/change-log';
import { COLLECTIONS, type CollectionName } from '../../db/collections';

/**
 * Facts read for earlier decisions, kept until the change sequence (src/db/change-log.ts) says
 * their record changed. Every decision first reads the change log (one small read, shared by
 * the decisions that arrive while one is under way) and drops what the cache holds of each
 * record changed since, by any process. So a kept fact is never older than the last write to
 * its record, which is the contract's "visible to the very next decision" (docs/api.md) across processes, and a
 * stream of user events drops only the users it names.
 *
 * Keys: a record's `_id`, or `<org>|<_id>`; `<org>|*` is something built from many records of
 * the organization (its link table). A change of record `k` of organization `o` drops `k`,
 * `o|k` and `o|*`; a change of "any record" drops the whole collection.
 */
export interface FactsView {
  /** False when caching is off: nothing set is kept, so loading more than asked for never pays. */
  readonly caching: boolean;
  get<V>(collection: CollectionName, key: string): V | undefined;
  set<V>(collection: CollectionName, key: string, value: V): void;
  delete(collection: CollectionName, key: string): void;
}

export interface FactsCache {
  /** The facts valid now. Must be called before reading any data for a decision. */
  current(): Promise<FactsView>;
}

/** The collections decisions read, whose changes the cache follows. */
const CACHED_COLLECTIONS = [
  COLLECTIONS.courses,
  COLLECTIONS.siteConfigurations,
  COLLECTIONS.publicCourses,
  COLLECTIONS.users,
  COLLECTIONS.memberships,
  COLLECTIONS.groupCourses,
];

const NOTHING: FactsView = { caching: false, get: () => undefined, set: () => undefined, delete: () => undefined };

/**
 * How long a dropped key is remembered. A decision reads the log, then data, then keeps what it
 * read; a change landing in between drops the key before the decision keeps it, and must win.
 * A decision older than this keeps nothing, so the memory can be bounded by time.
 */
const REMEMBER_MS = 10_000;

/** What is cached of one collection, and how far its change sequence has been read. */
class CollectionCache {
  /** The last change applied; -1 before the first read. */
  private seq = -1;
  /** The change at which everything was last dropped. */
  private flushedAt = -1;
  readonly entries = new Map<string, unknown>();
  /** Recently dropped keys with the change that dropped them, oldest first. */
  private readonly dropped = new Map<string, { seq: number; at: number }>();

  constructor(private readonly maxEntries: number) {}

  catchUp(changes: CollectionChanges | undefined, now: number): void {
    const seq = changes?.seq ?? 0;
    if (seq <= this.seq) return; // a read that finished after a newer one
    const recent = changes?.recent ?? [];
    if (this.seq < 0 || seq - recent.length >= this.seq + 1) {
      this.flush(seq); // first read, or further behind than the log reaches
    } else {
      for (const change of recent) {
        if (change.seq <= this.seq) continue;
        if (change.key === null) this.flush(change.seq);
        else for (const key of [change.key, `${change.org}|${change.key}`, `${change.org}|*`]) this.drop(key, change.seq, now);
      }
    }
    this.seq = seq;
    for (const [key, { at }] of this.dropped) {
      if (now - at < REMEMBER_MS) break;
      this.dropped.delete(key);
    }
  }

  /** Whether a value read by a decision that saw the log at change `seq` may be kept under `key`. */
  mayKeep(key: string, seq: number): boolean {
    return this.flushedAt <= seq && (this.dropped.get(key)?.seq ?? -1) <= seq;
  }

  keep(key: string, value: unknown): void {
    // Oldest first out: a bound on memory, not an eviction policy worth more.
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, value);
  }

  private flush(seq: number): void {
    this.entries.clear();
    this.dropped.clear();
    this.flushedAt = seq;
  }

  private drop(key: string, seq: number, now: number): void {
    this.entries.delete(key);
    this.dropped.delete(key); // re-inserted last, so the map stays oldest first
    this.dropped.set(key, { seq, at: now });
  }
}

export function createFactsCache(db: Db, opts: { enabled: boolean; maxEntriesPerCollection?: number }): FactsCache {
  if (!opts.enabled) return { current: async () => NOTHING };
  const maxEntries = opts.maxEntriesPerCollection ?? 200_000;
  const caches = new Map<string, CollectionCache>();

  // One read of the log at a time. A decision that arrives while one is under way waits for the
  // next, which starts after it arrived: it sees every write finished before it began.
  let running: Promise<Map<string, CollectionChanges>> | null = null;
  let queued: Promise<Map<string, CollectionChanges>> | null = null;
  const readLog = (): Promise<Map<string, CollectionChanges>> => {
    if (!running) {
      running = readChangeLog(db, CACHED_COLLECTIONS).finally(() => (running = null));
      return running;
    }
    queued ??= running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        queued = null;
        return readLog();
      });
    return queued;
  };

  return {
    async current() {
      const startedAt = Date.now();
      const log = await readLog();
      const now = Date.now();
      // Every use catches the collection up with this decision's read (a no-op once it has).
      const cacheOf = (name: CollectionName) => {
        let cache = caches.get(name);
        if (!cache) {
          cache = new CollectionCache(maxEntries);
          caches.set(name, cache);
        }
        cache.catchUp(log.get(name), now);
        return cache;
      };
      const seen = (name: CollectionName) => log.get(name)?.seq ?? 0;
      return {
        caching: true,
        get: <V>(collection: CollectionName, key: string) => cacheOf(collection).entries.get(key) as V | undefined,
        set: <V>(collection: CollectionName, key: string, value: V) => {
          const cache = cacheOf(collection);
          if (Date.now() - startedAt < REMEMBER_MS && cache.mayKeep(key, seen(collection))) cache.keep(key, value);
        },
        delete: (collection: CollectionName, key: string) => void cacheOf(collection).entries.delete(key),
      };
    },
  };
}
