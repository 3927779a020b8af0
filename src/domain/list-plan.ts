import type { Filter } from 'mongodb';
import type { GramDoc } from '../db/collections';
import { compareIds, type TenantCollection } from '../db/tenant';
import { gramCounts, matchesTerms, recordsWithGram, termGrams } from './search-index';

/**
 * How a filtered, searched list is read without scanning an organization (docs/lists-and-search.md).
 *
 * A search chooses its *driver*, the smallest index range that contains every answer: the
 * records of the query's rarest trigram (`{org, g, r}`), or the list's filter itself (an
 * equality index on the record, or another candidate set such as a group's links), whichever
 * the index counts say is smaller. The driver's records are read and each one is checked
 * exactly (filter and terms), so the answer is exact; its cost is the driver's size.
 */

/** Counts stop here: past it a gram or a filter is "large", and its exact size does not matter. */
export const CANDIDATE_CAP = 5000;
/** Records read per round while checking candidates. */
const CHECK_CHUNK = 1000;

export interface ListPage {
  offset: number;
  limit: number;
}

/** A record's equality filter (a value or `{$in: [...]}`), checked in memory. */
export function matchesFilter(doc: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  return Object.entries(filter).every(([k, v]) => {
    if (v && typeof v === 'object' && '$in' in v) return (v.$in as unknown[]).includes(doc[k]);
    return doc[k] === v;
  });
}

export interface SearchSource<T extends { id: number | string }, R extends number | string> {
  records: TenantCollection<T & { _id: string; org: string }>;
  grams: TenantCollection<GramDoc<R>>;
  /** The searched fields of a record. */
  fields(doc: T): string[];
  /** The list's filter (equalities on indexed fields). */
  filter: Record<string, unknown>;
  /** Another candidate set every answer is in and that drives the search (a group's courses), with its size. */
  within?: { size: number; keys(): Promise<R[]> };
  /** True when every record having the gram passes `filter` (users: grams exist for listed users only). */
  gramsImplyFilter: boolean;
}

/**
 * The page and count of the records matching `filter` and every folded term. `terms` is not
 * empty. Terms shorter than three characters have no trigram: they are checked on the
 * candidates of the other terms, or, when no term has one, on the filter's records.
 */
export async function searchList<T extends { id: number | string }, R extends number | string>(
  source: SearchSource<T, R>,
  terms: string[],
  page: ListPage,
): Promise<{ count: number; docs: T[] }> {
  const gs = termGrams(terms);
  const [counts, filterSize] = await Promise.all([
    gramCounts(source.grams, gs, CANDIDATE_CAP),
    source.within ? source.within.size : source.records.count(source.filter as Filter<T & { _id: string; org: string }>, { limit: CANDIDATE_CAP + 1 }),
  ]);
  if ([...counts.values()].some((c) => c === 0) || filterSize === 0) return { count: 0, docs: [] };
  const [rarest, rarestSize] = [...counts].reduce<[string | null, number]>((best, [g, c]) => (c < best[1] ? [g, c] : best), [null, Infinity]);

  // One term that is itself a trigram, on a list whose filter every gram entry satisfies: the
  // gram's entries are exactly the answer, so count and page come from the index alone.
  if (rarest !== null && source.gramsImplyFilter && !source.within && terms.length === 1 && Array.from(terms[0]!).length === 3) {
    const [count, keys] = await Promise.all([
      rarestSize <= CANDIDATE_CAP ? rarestSize : source.grams.count({ g: rarest } as Filter<GramDoc<R>>),
      recordsWithGram(source.grams, rarest, page),
    ]);
    const found = await source.records.findByIds(keys.map(String));
    const docs = keys.map((k) => found.get(String(k)) as T | undefined).filter((d): d is T => d !== undefined);
    return { count, docs: docs.filter((d) => matchesTerms(terms, source.fields(d))) };
  }

  // A candidate set (a group's courses) is the driver whatever the grams: it is what a gram's
  // candidates could not be checked against.
  const keys = source.within
    ? await source.within.keys()
    : rarest !== null && rarestSize <= filterSize
      ? await recordsWithGram(source.grams, rarest)
      : (
            await source.records
              .find(source.filter as Filter<T & { _id: string; org: string }>, { projection: { _id: 0, id: 1 } })
              .toArray()
          ).map((d) => (d as unknown as { id: R }).id);
  const matches: T[] = [];
  for (let i = 0; i < keys.length; i += CHECK_CHUNK) {
    const found = await source.records.findByIds(keys.slice(i, i + CHECK_CHUNK).map(String));
    for (const doc of found.values()) {
      const d = doc as unknown as T;
      if (matchesFilter(doc as unknown as Record<string, unknown>, source.filter) && matchesTerms(terms, source.fields(d))) matches.push(d);
    }
  }
  matches.sort((a, b) => compareIds(a.id, b.id));
  return { count: matches.length, docs: matches.slice(page.offset, page.offset + page.limit) };
}
