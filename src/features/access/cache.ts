import type { Db } from 'mongodb';
import { readDataVersion } from '../../db/data-version';

/**
 * Facts read for earlier decisions, valid only while the data version (src/db/data-version.ts)
 * is the one read before they were: every decision first reads the stored version (one
 * primary-key read); if it changed, everything cached is dropped. Entries are therefore
 * never older than the last write any process made, which keeps SPEC §4's "visible to the
 * very next decision" across processes sharing the database.
 *
 * One Map per version instead of a stamp per entry: a reader holding an older generation can
 * still fill it, but nobody reads that generation again.
 */
export interface FactsView {
  get<V>(key: string): V | undefined;
  set<V>(key: string, value: V): void;
}

const NOTHING: FactsView = { get: () => undefined, set: () => undefined };

class Generation implements FactsView {
  private readonly entries = new Map<string, unknown>();
  constructor(
    readonly version: string | null,
    private readonly maxEntries: number,
  ) {}
  get<V>(key: string): V | undefined {
    return this.entries.get(key) as V | undefined;
  }
  set<V>(key: string, value: V): void {
    // Oldest first out: a bound on memory, not an eviction policy worth more.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, value);
  }
}

export interface FactsCache {
  /** The facts valid now. Must be called before reading any data for a decision. */
  current(): Promise<FactsView>;
}

export function createFactsCache(db: Db, opts: { enabled: boolean; maxEntries?: number }): FactsCache {
  if (!opts.enabled) return { current: async () => NOTHING };
  const maxEntries = opts.maxEntries ?? 300_000;
  let generation: Generation | null = null;
  return {
    async current() {
      const version = await readDataVersion(db);
      if (!generation || generation.version !== version) generation = new Generation(version, maxEntries);
      return generation;
    },
  };
}
