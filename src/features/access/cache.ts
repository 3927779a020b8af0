import type { Db } from 'mongodb';
import type { CollectionName } from '../../db/collections';
import { readDataVersions } from '../../db/data-version';

/**
 * Facts read for earlier decisions, each valid only while the data version of the collection it
 * came from (src/db/data-version.ts) is still the one read before it was: every decision first
 * reads the stored versions (one read of a tiny collection), and drops what it holds of every
 * collection whose version moved. So an entry is never older than the last write any process
 * made to its collection, which keeps SPEC §4's "visible to the very next decision" across
 * processes sharing the database.
 */
export interface FactsView {
  /** False when caching is off: nothing set is kept, so loading more than asked for never pays. */
  readonly caching: boolean;
  get<V>(collection: CollectionName, key: string): V | undefined;
  set<V>(collection: CollectionName, key: string, value: V): void;
  delete(collection: CollectionName, key: string): void;
}

const NOTHING: FactsView = { caching: false, get: () => undefined, set: () => undefined, delete: () => undefined };

/**
 * What is cached of one collection at one version. One Map per version rather than a stamp per
 * entry. `seq` orders the requests that read versions, so that a request that read an older
 * version, finishing late, neither replaces a newer generation nor fills it.
 */
class Generation {
  readonly entries = new Map<string, unknown>();
  constructor(
    readonly version: string | undefined,
    readonly seq: number,
  ) {}
}

export interface FactsCache {
  /** The facts valid now. Must be called before reading any data for a decision. */
  current(): Promise<FactsView>;
}

export function createFactsCache(db: Db, opts: { enabled: boolean; maxEntriesPerCollection?: number }): FactsCache {
  if (!opts.enabled) return { current: async () => NOTHING };
  const maxEntries = opts.maxEntriesPerCollection ?? 200_000;
  const generations = new Map<string, Generation>();
  let lastSeq = 0;
  return {
    async current() {
      const versions = await readDataVersions(db);
      const seq = ++lastSeq;
      // The generations this request may use: exactly those stamped with the versions it read.
      const valid = new Map<string, Generation | null>();
      const generationOf = (collection: string): Generation | null => {
        let g = valid.get(collection);
        if (g !== undefined) return g;
        const version = versions.get(collection);
        g = generations.get(collection) ?? null;
        if (!g || (g.version !== version && seq > g.seq)) generations.set(collection, (g = new Generation(version, seq)));
        else if (g.version !== version) g = null; // a newer request already moved on: cache nothing here
        valid.set(collection, g);
        return g;
      };
      return {
        caching: true,
        get: <V>(collection: CollectionName, key: string) => generationOf(collection)?.entries.get(key) as V | undefined,
        set: <V>(collection: CollectionName, key: string, value: V) => {
          const entries = generationOf(collection)?.entries;
          if (!entries) return;
          // Oldest first out: a bound on memory, not an eviction policy worth more.
          if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
          entries.set(key, value);
        },
        delete: (collection: CollectionName, key: string) => void generationOf(collection)?.entries.delete(key),
      };
    },
  };
}
