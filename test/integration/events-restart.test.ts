// SPEC §5 "nothing is lost" and §6 shutdown: a consumer stopped in the middle of a batch of
// 500 activations commits what it finished; the next instance applies the rest, and every
// user ends with exactly one membership.
import { MongoClient } from 'mongodb';
import { COLLECTIONS, type MembershipDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import {
  closeProducer,
  cloudEvent,
  type EventTestService,
  newUserId,
  produce,
  sameDeployment,
  seedRule,
  startEventService,
  structured,
  TYPES,
  userData,
  waitCaughtUp,
  waitFor,
} from '../helpers/events';
import { uniqueName } from '../helpers/stack';

const EVENTS = 500;
let service: EventTestService;
/** The test's own connection: it counts across the restart, while the service's is closed. */
let mongo: MongoClient;

beforeAll(async () => {
  service = await startEventService({ LOG_LEVEL: 'info' });
  mongo = await new MongoClient(service.config.MONGO_URL).connect();
}, 60000);
afterAll(async () => {
  await closeProducer();
  await mongo.close();
  await service.close();
}, 30000);

test('nothing is lost and nothing is applied twice across a consumer restart in the middle of 500 events', async () => {
  const org = uniqueName('org');
  const tenant = new Tenant(mongo.db(service.config.MONGO_DB), org);
  const group = await seedRule(tenant, 'bulk.org');
  const ids = Array.from({ length: EVENTS }, () => newUserId());
  const topic = service.config.KAFKA_TOPICS[0]!;
  for (let i = 0; i < ids.length; i += 250) {
    await produce(
      topic,
      ids.slice(i, i + 250).map((id) => structured(cloudEvent(TYPES.activated, userData(org, { id, email: `u${id}@bulk.org` })), id)),
    );
  }
  const memberships = () => tenant.collection<MembershipDoc>(COLLECTIONS.memberships);
  await waitFor(
    () => memberships().countDocuments(),
    (n) => n >= 50,
    60000,
  );
  await service.stop();
  const atStop = await memberships().countDocuments();
  // The premise of the test: the stop came in the middle of the batch.
  expect(atStop).toBeLessThan(EVENTS);

  service = await startEventService(sameDeployment(service), { logs: service.logs });
  await waitFor(
    () => memberships().countDocuments(),
    (n) => n >= EVENTS,
    120000,
  );
  await waitCaughtUp(service.config.KAFKA_GROUP_ID, topic, 60000);
  const all = await memberships().find({}).toArray();
  expect(all).toHaveLength(EVENTS);
  expect(new Set(all.map((m) => m.id)).size).toBe(EVENTS);
  expect(all.every((m) => m.group === group.id && m.automatic)).toBe(true);
  expect(service.logs.join('')).not.toMatch(/event handler failed/);
}, 240000);
