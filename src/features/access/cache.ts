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
 * entry: a request that read an older version may still fill its generation, but no request
 * that reads the newer version looks there again.
 */
class Generation {
  readonly entries = new Map<string, unknown>();
  constructor(readonly version: string | undefined) {}
}

export interface FactsCache {
  /** The facts valid now. Must be called before reading any data for a decision. */
  current(): Promise<FactsView>;
}

export function createFactsCache(db: Db, opts: { enabled: boolean; maxEntriesPerCollection?: number }): FactsCache {
  if (!opts.enabled) return { current: async () => NOTHING };
  const maxEntries = opts.maxEntriesPerCollection ?? 200_000;
  const generations = new Map<string, Generation>();
  return {
    async current() {
      const versions = await readDataVersions(db);
      // The generations this request may use: exactly those stamped with the versions it read.
      const valid = new Map<string, Generation>();
      const generationOf = (collection: string): Generation => {
        let g = valid.get(collection);
        if (g) return g;
        const version = versions.get(collection);
        g = generations.get(collection);
        if (!g || g.version !== version) generations.set(collection, (g = new Generation(version)));
        valid.set(collection, g);
        return g;
      };
      return {
        caching: true,
        get: <V>(collection: CollectionName, key: string) => generationOf(collection).entries.get(key) as V | undefined,
        set: <V>(collection: CollectionName, key: string, value: V) => {
          const { entries } = generationOf(collection);
          // Oldest first out: a bound on memory, not an eviction policy worth more.
          if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
          entries.set(key, value);
        },
        delete: (collection: CollectionName, key: string) => generationOf(collection).entries.delete(key),
      };
    },
  };
}
