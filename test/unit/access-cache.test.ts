// SPEC §4 "a change ... is visible to the very next decision": the access cache uses an entry
// only while its collection's stored data version is the one read before the entry was.
import type { Db } from 'mongodb';
import { COLLECTIONS } from '../../src/db/collections';
import { createFactsCache } from '../../src/features/access/cache';

/** A database whose data_versions collection holds `versions`, and nothing else. */
function fakeDb(versions: Record<string, string>): Db {
  const collection = () => ({ find: () => ({ toArray: async () => Object.entries(versions).map(([_id, v]) => ({ _id, v })) }) });
  return { collection } as unknown as Db;
}

test('an entry is served while its collection version stands, and dropped once it moves', async () => {
  const versions: Record<string, string> = { [COLLECTIONS.users]: 'u1' };
  const cache = createFactsCache(fakeDb(versions), { enabled: true });
  (await cache.current()).set(COLLECTIONS.users, 'org|1', 'alice');
  expect((await cache.current()).get(COLLECTIONS.users, 'org|1')).toBe('alice');
  versions[COLLECTIONS.users] = 'u2';
  expect((await cache.current()).get(COLLECTIONS.users, 'org|1')).toBeUndefined();
});

test('a write to one collection keeps what is cached of the others', async () => {
  const versions: Record<string, string> = {};
  const cache = createFactsCache(fakeDb(versions), { enabled: true });
  const view = await cache.current();
  view.set(COLLECTIONS.groupCourses, 'org|c|1', true);
  view.set(COLLECTIONS.users, 'org|1', 'alice');
  versions[COLLECTIONS.users] = 'u1'; // the first write ever to users
  const next = await cache.current();
  expect(next.get(COLLECTIONS.groupCourses, 'org|c|1')).toBe(true);
  expect(next.get(COLLECTIONS.users, 'org|1')).toBeUndefined();
});

test('what a request read before a write cannot reach requests that read the new version', async () => {
  const versions: Record<string, string> = { [COLLECTIONS.memberships]: 'm1' };
  const cache = createFactsCache(fakeDb(versions), { enabled: true });
  const before = await cache.current(); // read the version, then (slowly) the data
  versions[COLLECTIONS.memberships] = 'm2'; // meanwhile a write lands
  const after = await cache.current();
  before.set(COLLECTIONS.memberships, 'org|1', 5); // the old read finishes and caches
  expect(after.get(COLLECTIONS.memberships, 'org|1')).toBeUndefined();
  expect((await cache.current()).get(COLLECTIONS.memberships, 'org|1')).toBeUndefined();
});

test('a request that read an older version, finishing late, does not throw away the newer generation', async () => {
  const versions: Record<string, string> = { [COLLECTIONS.users]: 'u1' };
  const cache = createFactsCache(fakeDb(versions), { enabled: true });
  const before = await cache.current();
  versions[COLLECTIONS.users] = 'u2';
  const after = await cache.current();
  after.set(COLLECTIONS.users, 'org|2', 'bob');
  before.set(COLLECTIONS.users, 'org|1', 'stale alice');
  expect(before.get(COLLECTIONS.users, 'org|2')).toBeUndefined();
  const next = await cache.current();
  expect(next.get(COLLECTIONS.users, 'org|2')).toBe('bob');
  expect(next.get(COLLECTIONS.users, 'org|1')).toBeUndefined();
});

test('with the cache off nothing is kept and no version is read', async () => {
  const db = { collection: () => { throw new Error('no read expected'); } } as unknown as Db;
  const view = await createFactsCache(db, { enabled: false }).current();
  view.set(COLLECTIONS.users, 'org|1', 'alice');
  expect(view.get(COLLECTIONS.users, 'org|1')).toBeUndefined();
  expect(view.caching).toBe(false);
});

test('each collection keeps at most maxEntriesPerCollection entries, the oldest leaving first', async () => {
  const cache = createFactsCache(fakeDb({}), { enabled: true, maxEntriesPerCollection: 2 });
  const view = await cache.current();
  view.set(COLLECTIONS.users, 'a', 1);
  view.set(COLLECTIONS.users, 'b', 2);
  view.set(COLLECTIONS.users, 'c', 3);
  expect([view.get(COLLECTIONS.users, 'a'), view.get(COLLECTIONS.users, 'b'), view.get(COLLECTIONS.users, 'c')]).toEqual([undefined, 2, 3]);
});
