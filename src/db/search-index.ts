import type { Filter } from 'mongodb';
import { COLLECTIONS, type CourseDoc, type CourseGramDoc, type GramDoc, type UserDoc, type UserGramDoc } from './collections';
import type { Tenant, TenantCollection } from './tenant';

/**
 * The search index, a storage structure (docs/api.md, filters: `search` makes every term a case-insensitive literal substring
 * of one of the record's fields). An unanchored substring cannot use a B-tree, so each record's
 * searchable fields are cut into trigrams, lowercased, one scalar document per (record, gram)
 * in a side collection (`user_grams`, `course_grams`) indexed `{g, org, r}`. A term of three or
 * more characters occurs in a field only if each of its trigrams does, so the users having the
 * rarest trigram of the query are a superset of the answer; each candidate is then checked
 * exactly by the database, with the escaped literal `$regex` of each term (src/db/list-plan.ts). Scalar documents serve identically on MongoDB
 * and on the patched FerretDB (no multikey index needed). docs/lists-and-search.md has the plan
 * and its costs.
 */

/** Search terms: split on spaces and commas, empty ones dropped. */
export function searchTerms(raw: string | undefined): string[] {
  return (raw ?? '').split(/[\s,]+/).filter(Boolean);
}

/** `text` as a regular expression that matches exactly those characters, on MongoDB (PCRE) and FerretDB (Go RE2). */
export function literalPattern(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&').replace(/\0/g, '\\x00');
}

/**
 * The filter for a multi-term search: every term must match (case-insensitively, as a literal
 * substring) at least one of `fields`. No terms, no condition.
 */
export function searchFilter(fields: readonly string[], raw: string | undefined): Record<string, unknown> {
  const terms = searchTerms(raw);
  if (terms.length === 0) return {};
  return {
    $and: terms.map((term) => ({
      $or: fields.map((field) => ({ [field]: { $regex: literalPattern(term), $options: 'i' } })),
    })),
  };
}

/** Case-insensitive comparison: both sides lowercased (JavaScript's Unicode lowercase mapping). */
export const fold = (text: string) => text.toLowerCase();

const GRAM = 3;

/** The distinct trigrams of each value, by code point (a surrogate pair is one character). */
export function gramsOf(values: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const value of values) {
    const chars = Array.from(fold(value));
    for (let i = 0; i + GRAM <= chars.length; i++) out.add(chars.slice(i, i + GRAM).join(''));
  }
  return out;
}

/** The fields `search` looks in (docs/api.md). */
export const USER_SEARCH_FIELDS = ['username', 'name', 'email'] as const;
export const COURSE_SEARCH_FIELDS = ['id', 'name'] as const;
export const userSearchFields = (u: Pick<UserDoc, 'username' | 'name' | 'email'>) => [u.username, u.name, u.email];
export const courseSearchFields = (c: Pick<CourseDoc, 'id' | 'name'>) => [c.id, c.name];

const gramId = (r: number | string, g: string) => `${r}|${g}`;

/**
 * Makes the record's grams in the tenant's organization those of `wanted`, as computed from the
 * record as of `time` (its `event_time`): every gram wanted ends with a `t` at least `time`, and
 * grams not wanted are deleted only when older. So a computation from an older read of the
 * record, landing late, can add a stray gram (harmless: candidates are checked) but never
 * remove a newer computation's gram (which would hide the record from searches).
 *
 * The usual cases are cheap writes: a missing gram is inserted (one insertMany), a present older
 * one gets the new `t` (one updateMany). Only a gram that an older computation deleted or
 * inserted meanwhile (the insert refused, or fewer updated than asked) goes through the
 * conditional upsert, which settles either race.
 */
async function syncGrams<R extends number | string>(grams: TenantCollection<GramDoc<R>>, r: R, wanted: Set<string>, time: string): Promise<void> {
  const existing = await grams.find({ r } as Filter<GramDoc<R>>, { projection: { _id: 1, t: 1 } }).toArray();
  const have = new Map(existing.map((d) => [d._id, d.t]));
  const wantedIds = new Set([...wanted].map((g) => gramId(r, g)));
  const missing = [...wanted].filter((g) => !have.has(gramId(r, g)));
  const older = [...wanted].filter((g) => (have.get(gramId(r, g)) ?? time) < time);
  const extras = existing.filter((d) => !wantedIds.has(d._id) && d.t < time).map((d) => d._id);
  const racing = new Set<string>();
  if (missing.length > 0) {
    const refused = await grams.insertMany(missing.map((g) => ({ _id: gramId(r, g), g, r, t: time }) as Omit<GramDoc<R>, 'org'>));
    for (const id of refused) racing.add(id.slice(String(r).length + 1));
  }
  if (older.length > 0) {
    const ids = older.map((g) => gramId(r, g));
    const { modifiedCount } = await grams.updateMany({ _id: { $in: ids }, t: { $lt: time } } as Filter<GramDoc<R>>, { $set: { t: time } } as never);
    if (modifiedCount < older.length) {
      for (const g of older) racing.add(g);
    }
  }
  if (racing.size > 0) {
    await grams.upsertEach(
      [...racing].map((g) => ({ filter: { _id: gramId(r, g), t: { $lt: time } } as Filter<GramDoc<R>>, set: { g, r, t: time } as Partial<GramDoc<R>> })),
    );
  }
  if (extras.length > 0) await grams.deleteMany({ _id: { $in: extras }, t: { $lt: time } } as Filter<GramDoc<R>>);
}

/** Deletes the record's grams computed from its versions up to `time` (a deletion or a move away). */
async function dropGrams<R extends number | string>(grams: TenantCollection<GramDoc<R>>, r: R, time?: string): Promise<void> {
  await grams.deleteMany({ r, ...(time === undefined ? {} : { t: { $lte: time } }) } as Filter<GramDoc<R>>);
}

export const userGrams = (tenant: Tenant) => tenant.collection<UserGramDoc>(COLLECTIONS.userGrams);
export const courseGrams = (tenant: Tenant) => tenant.collection<CourseGramDoc>(COLLECTIONS.courseGrams);

/** The user's grams as its record now stands: none when it is not listed (site administrators are never searched). */
export function indexUser(tenant: Tenant, user: Pick<UserDoc, 'id' | 'username' | 'name' | 'email' | 'listed' | 'event_time'>): Promise<void> {
  const wanted = user.listed === 1 ? gramsOf(userSearchFields(user)) : new Set<string>();
  return syncGrams(userGrams(tenant), user.id, wanted, user.event_time);
}

export const unindexUser = (tenant: Tenant, userId: number, time?: string) => dropGrams(userGrams(tenant), userId, time);

export function indexCourse(tenant: Tenant, course: Pick<CourseDoc, 'id' | 'name' | 'event_time'>): Promise<void> {
  return syncGrams(courseGrams(tenant), course.id, gramsOf(courseSearchFields(course)), course.event_time);
}

export const unindexCourse = (tenant: Tenant, courseKey: string, time?: string) => dropGrams(courseGrams(tenant), courseKey, time);

/**
 * The grams of many new users at once (the import's batch of users no organization had): plain
 * inserts, since a new user has no grams. One left by an earlier record of the same id is kept
 * (its key refuses the insert): a stray gram costs a candidate check, never a wrong answer.
 */
export async function indexNewUsers(
  tenant: Tenant,
  users: readonly Pick<UserDoc, '_id' | 'id' | 'username' | 'name' | 'email' | 'listed' | 'event_time'>[],
): Promise<void> {
  const docs = users
    .filter((u) => u.listed === 1)
    .flatMap((u) => [...gramsOf(userSearchFields(u))].map((g) => ({ _id: gramId(u.id, g), g, r: u.id, t: u.event_time })));
  for (let i = 0; i < docs.length; i += GRAMS_A_WRITE) await userGrams(tenant).insertMany(docs.slice(i, i + GRAMS_A_WRITE));
}

/**
 * Grams one insert writes: 10,000 once outlasted the client's 10 s socket timeout in a loaded CI
 * run (an import of 1,500 learners is about 33,000 grams); half that halves each write's time,
 * and a batch of 500 new learners (about 11,000 grams) still takes three writes, not two.
 */
const GRAMS_A_WRITE = 5000;

/** The grams a term of the query is looked up by: its trigrams (none for a term shorter than three characters). */
export function termGrams(terms: readonly string[]): string[] {
  return [...gramsOf(terms)];
}

/**
 * How many records of the organization have each gram, counted from the index with a limit (a
 * count stops there): first up to 1000 each; only if none is below that, up to `cap` for those
 * that reached it. Enough to pick the rarest and to know whether it is small, for at most a
 * thousand index keys per gram in the usual case (a query with one rare trigram).
 * A count that reached its limit is reported as the limit + 1.
 */
export async function gramCounts<R extends number | string>(
  grams: TenantCollection<GramDoc<R>>,
  gs: readonly string[],
  cap: number,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let open = [...gs];
  for (const limit of [1000, cap].filter((l, i, all) => l <= cap && all.indexOf(l) === i)) {
    const found = await Promise.all(open.map((g) => grams.count({ g } as Filter<GramDoc<R>>, { limit: limit + 1 })));
    open.forEach((g, i) => {
      counts.set(g, found[i]!);
    });
    if (found.some((n) => n <= limit)) break; // the rarest is known
    open = open.filter((_, i) => found[i]! > limit);
  }
  return counts;
}

/** The records having gram `g`, in key order (index-only on MongoDB: `{g, org, r}` covers it). */
export async function recordsWithGram<R extends number | string>(
  grams: TenantCollection<GramDoc<R>>,
  g: string,
  page?: { offset: number; limit: number },
): Promise<R[]> {
  let cursor = grams.find({ g } as Filter<GramDoc<R>>, { projection: { _id: 0, r: 1 } }).sort({ r: 1 });
  if (page) cursor = cursor.skip(page.offset).limit(page.limit);
  return (await cursor.toArray()).map((d) => d.r);
}
