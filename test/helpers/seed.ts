import type { Db } from 'mongodb';
import { COLLECTIONS, type CourseDoc, type UserDoc } from '../../src/db/collections';
import { indexCourse, indexUser } from '../../src/db/search-index';
import { Tenant } from '../../src/db/tenant';
import { normalizeEventTime } from '../../src/domain/event-time';
import { firstRecord } from '../../src/domain/learners';
import { syncCourseFacts, syncUserGroups } from '../../src/domain/list-facts';

/**
 * Users and courses are read models the Kafka consumer fills; tests seed them directly, through
 * the same `Tenant` every writer uses, then derive what the event handlers derive after their
 * write (list facts, search grams).
 */
export function seeder(db: Db, org: string) {
  const tenant = new Tenant(db, org);
  return {
    tenant,
    /**
     * A learner as a user event that is no activation (`user.updated`) writes them: their record
     * and its history (learners.ts `firstRecord`), so a later activation of theirs applies the rules.
     */
    async user(id: number, fields: Partial<Omit<UserDoc, '_id' | 'id' | 'org'>> = {}): Promise<UserDoc> {
      const email = fields.email ?? `user${id}@example.com`;
      const facts = {
        id,
        username: fields.username ?? `user${id}`,
        name: fields.name ?? `User ${id}`,
        email,
        is_active: fields.is_active ?? true,
        is_staff: fields.is_staff ?? false,
        is_site_admin: fields.is_site_admin ?? false,
      };
      const record = firstRecord(facts, org, normalizeEventTime(fields.event_time ?? '2024-01-01T00:00:00Z'), false, null);
      const { org: _org, ...rest } = record;
      const doc = await tenant.collection<UserDoc>(COLLECTIONS.users).insertOne({ ...rest, projected: record.rev });
      await syncUserGroups(tenant, [id]);
      await indexUser(tenant, doc);
      return doc;
    },
    async course(key: string, name = `Course ${key}`): Promise<CourseDoc> {
      const doc = await tenant
        .collection<CourseDoc>(COLLECTIONS.courses)
        .insertOne({ _id: key, id: key, name, event_time: '2024-01-01T00:00:00Z', is_public: 0, linked: 0, facts_v: 0 });
      await syncCourseFacts(tenant, [key]);
      await indexCourse(tenant, doc);
      return doc;
    },
  };
}

/**
 * Every document of every collection of `db`, by collection then `_id`: "was anything written?".
 * Taken once the change relay has resolved the outbox (it writes audit records and deletes
 * intents in the background, for earlier writes); the relay's lease, renewed on a timer, is left
 * out. A refused request that left an intent keeps the outbox busy and shows in the snapshot.
 */
export async function snapshot(db: Db): Promise<Record<string, unknown[]>> {
  const deadline = Date.now() + 5000;
  const relayLive = async () => (await db.collection(COLLECTIONS.leases).countDocuments({ expires: { $gt: new Date() } })) > 0;
  while (Date.now() < deadline && (await db.collection(COLLECTIONS.outbox).countDocuments({})) > 0 && (await relayLive())) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const names = (await db.listCollections({}, { nameOnly: true }).toArray())
    .map((c) => c.name)
    .filter((n) => n !== COLLECTIONS.leases)
    .sort();
  // Read side by side: a property test takes a snapshot around every one of its requests.
  const contents = await Promise.all(names.map((name) => db.collection(name).find().sort({ _id: 1 }).toArray()));
  return Object.fromEntries(names.map((name, i) => [name, contents[i]!]));
}

/** Runs `request`, checks it was refused with `status` and `body`, and that it wrote nothing. */
export async function expectRefusedWithoutWrites(
  db: Db,
  request: () => Promise<{ status: number; body: unknown }>,
  status: number,
  body: unknown,
): Promise<void> {
  const before = await snapshot(db);
  const res = await request();
  expect(res.status).toBe(status);
  expect(res.body).toEqual(body);
  expect(await snapshot(db)).toEqual(before);
}
