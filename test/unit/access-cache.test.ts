// docs/api.md "a change ... is visible to the very next decision": the access cache keeps a fact
// until the change sequence names its record, and drops only what changed.
import type { Db } from 'mongodb';
import { CHANGE_LOG_LENGTH, encodeEntry } from '../../src/db/change-log';
import { type ChangeLogDoc, COLLECTIONS } from '../../src/db/collections';
import { createFactsCache } from '../../src/features/access/cache';

/** An in-memory change_log collection with the server's `$inc` + `$push … $slice` semantics. */
function fakeLog() {
  const docs = new Map<string, ChangeLogDoc>();
  let reads = 0;
  const db = {
    collection: () => ({
      find: () => ({
        toArray: async () => {
          reads++;
          return [...docs.values()].map((d) => ({ ...d, log: [...d.log] }));
        },
      }),
    }),
  } as unknown as Db;
  return {
    db,
    reads: () => reads,
    change(collection: string, key: string | null, org = 'org') {
      const doc = docs.get(collection) ?? { _id: collection, seq: 0, log: [] };
      doc.seq += 1;
      doc.log = [...doc.log, encodeEntry({ k: key, o: org })].slice(-CHANGE_LOG_LENGTH);
      docs.set(collection, doc);
    },
  };
}

test('a fact is served until its record changes, and the change drops only that record', async () => {
  const log = fakeLog();
  const cache = createFactsCache(log.db, { enabled: true });
  const view = await cache.current();
  view.set(COLLECTIONS.users, 'org|1', 'alice');
  view.set(COLLECTIONS.users, 'org|2', 'bob');
  expect((await cache.current()).get(COLLECTIONS.users, 'org|1')).toBe('alice');
  log.change(COLLECTIONS.users, '1');
  const next = await cache.current();
  expect(next.get(COLLECTIONS.users, 'org|1')).toBeUndefined();
  expect(next.get(COLLECTIONS.users, 'org|2')).toBe('bob');
});

test('a change of one collection keeps what is cached of the others', async () => {
  const log = fakeLog();
  const cache = createFactsCache(log.db, { enabled: true });
  const view = await cache.current();
  view.set(COLLECTIONS.groupCourses, 'org|c|1', true);
  view.set(COLLECTIONS.users, 'org|1', 'alice');
  log.change(COLLECTIONS.users, '1');
  const next = await cache.current();
  expect(next.get(COLLECTIONS.groupCourses, 'org|c|1')).toBe(true);
  expect(next.get(COLLECTIONS.users, 'org|1')).toBeUndefined();
});

test("a change drops the record's bare key and its organization's aggregate, not another organization's", async () => {
  const log = fakeLog();
  const cache = createFactsCache(log.db, { enabled: true });
  const view = await cache.current();
  view.set(COLLECTIONS.courses, 'course-v1:A+1+1', 'org-a');
  view.set(COLLECTIONS.groupCourses, 'org-a|*', 'table a');
  view.set(COLLECTIONS.groupCourses, 'org-b|*', 'table b');
  log.change(COLLECTIONS.courses, 'course-v1:A+1+1', 'org-a');
  log.change(COLLECTIONS.groupCourses, 'course-v1:A+1+1|7', 'org-a');
  const next = await cache.current();
  expect(next.get(COLLECTIONS.courses, 'course-v1:A+1+1')).toBeUndefined();
  expect(next.get(COLLECTIONS.groupCourses, 'org-a|*')).toBeUndefined();
  expect(next.get(COLLECTIONS.groupCourses, 'org-b|*')).toBe('table b');
});

test('a change of "any record" drops the whole collection', async () => {
  const log = fakeLog();
  const cache = createFactsCache(log.db, { enabled: true });
  const view = await cache.current();
  view.set(COLLECTIONS.memberships, 'org|1', 3);
  view.set(COLLECTIONS.memberships, 'org|2', 4);
  log.change(COLLECTIONS.memberships, null);
  const next = await cache.current();
  expect([next.get(COLLECTIONS.memberships, 'org|1'), next.get(COLLECTIONS.memberships, 'org|2')]).toEqual([undefined, undefined]);
});

test('what a decision read before a change cannot be kept once the change is seen', async () => {
  const log = fakeLog();
  const cache = createFactsCache(log.db, { enabled: true });
  const before = await cache.current(); // read the log, then (slowly) the data
  log.change(COLLECTIONS.memberships, '1'); // meanwhile a write lands
  const after = await cache.current();
  before.set(COLLECTIONS.memberships, 'org|1', 5); // the old read finishes and tries to keep it
  before.set(COLLECTIONS.memberships, 'org|2', 6); // a record that did not change may be kept
  expect(after.get(COLLECTIONS.memberships, 'org|1')).toBeUndefined();
  const next = await cache.current();
  expect(next.get(COLLECTIONS.memberships, 'org|1')).toBeUndefined();
  expect(next.get(COLLECTIONS.memberships, 'org|2')).toBe(6);
});

test('a reader further behind than the log reaches drops everything of that collection', async () => {
  const log = fakeLog();
  const cache = createFactsCache(log.db, { enabled: true });
  (await cache.current()).set(COLLECTIONS.users, 'org|1', 'alice');
  // More changes than the log keeps, none of them naming user 1: the one naming it may be among the forgotten.
  for (let i = 0; i <= CHANGE_LOG_LENGTH; i++) log.change(COLLECTIONS.users, String(1000 + i));
  expect((await cache.current()).get(COLLECTIONS.users, 'org|1')).toBeUndefined();
});

test('decisions that arrive while the log is being read share the next read', async () => {
  const log = fakeLog();
  const cache = createFactsCache(log.db, { enabled: true });
  await Promise.all(Array.from({ length: 20 }, () => cache.current()));
  // One read under way when the rest arrive, then one more for all of them.
  expect(log.reads()).toBe(2);
});

test('with the cache off nothing is kept and no log is read', async () => {
  const db = {
    collection: () => {
      throw new Error('no read expected');
    },
  } as unknown as Db;
  const view = await createFactsCache(db, { enabled: false }).current();
  view.set(COLLECTIONS.users, 'org|1', 'alice');
  expect(view.get(COLLECTIONS.users, 'org|1')).toBeUndefined();
  expect(view.caching).toBe(false);
});

test('each collection keeps at most maxEntriesPerCollection entries, the oldest leaving first', async () => {
  const cache = createFactsCache(fakeLog().db, { enabled: true, maxEntriesPerCollection: 2 });
  const view = await cache.current();
  view.set(COLLECTIONS.users, 'a', 1);
  view.set(COLLECTIONS.users, 'b', 2);
  view.set(COLLECTIONS.users, 'c', 3);
  expect([view.get(COLLECTIONS.users, 'a'), view.get(COLLECTIONS.users, 'b'), view.get(COLLECTIONS.users, 'c')]).toEqual([undefined, 2, 3]);
});
