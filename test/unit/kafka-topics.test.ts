// `cag topics --create` (src/kafka-topics.ts): a topic the broker made is reported made even while
// its metadata has not reached the broker that answers. kafkajs's own wait for leaders gave up on
// UNKNOWN_TOPIC_OR_PARTITION, which a KRaft broker answers for a moment after the creation, and
// reported the topic "not created" (it failed one CI run of upgrade-job.test.ts). A fake admin
// (pure logic: what the function does with the answers it gets) answers as that broker did.
import type { Admin } from 'kafkajs';
import { createNeededTopics, type TopicSettings } from '../../src/kafka-topics';

const settings = { KAFKA_BROKERS: ['b:9092'], KAFKA_GROUP_ID: 'g', KAFKA_TOPICS: ['t'], KAFKA_DLQ_PREFIX: '', CHANGES_TOPIC: '' } as unknown as TopicSettings;

function brokerAfterCreation(notYet: number, later: () => unknown, listed = ['t', 't.dlq']) {
  const calls: { waitForLeaders?: boolean }[] = [];
  let asked = 0;
  let askedByName = 0;
  const admin = {
    createTopics: async (request: { waitForLeaders?: boolean }) => {
      calls.push(request);
      return true;
    },
    // Not listed for `notYet` asks (a KRaft broker's metadata has not caught up): asked by name
    // then, it answers UNKNOWN_TOPIC_OR_PARTITION, which kafkajs logs at error level.
    listTopics: async () => (asked++ < notYet ? [] : listed),
    fetchTopicMetadata: async () => {
      askedByName++;
      if (asked <= notYet) throw Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
      return later();
    },
  } as unknown as Admin;
  return { admin, calls, asked: () => asked, askedByName: () => askedByName };
}

test('a topic whose metadata arrives a moment after its creation is created, and waited for until it has leaders', async () => {
  const broker = brokerAfterCreation(3, () => ({ topics: [{ name: 't', partitions: [{ partitionId: 0, leader: 1 }] }] }));
  const outcomes = await createNeededTopics(broker.admin, settings, { partitions: -1, replicationFactor: -1, leaderWaitMs: 5000 });
  expect(outcomes.map((o) => o.outcome)).toEqual(['created', 'created']);
  expect(broker.calls.every((c) => c.waitForLeaders === false)).toBe(true);
  // Each topic: asked until its metadata came (3 times not listed, then leaders), the next at once;
  // by name only once listed (no refusal for kafkajs to log as an error).
  expect(broker.asked()).toBe(5);
  expect(broker.askedByName()).toBe(2);
});

test('a topic made whose leaders do not come within the wait, or whose metadata this principal may not read, is still reported created', async () => {
  const slow = brokerAfterCreation(Number.POSITIVE_INFINITY, () => undefined);
  expect((await createNeededTopics(slow.admin, settings, { partitions: -1, replicationFactor: -1, leaderWaitMs: 300 })).map((o) => o.outcome)).toEqual([
    'created',
    'created',
  ]);
  // A principal that may not describe the topics never sees them listed: asked by name after
  // `unlistedMs`, refused, and done (not kept waiting for leaders it cannot see).
  const denied = brokerAfterCreation(0, () => {
    throw Object.assign(new Error('not authorized'), { type: 'TOPIC_AUTHORIZATION_FAILED' });
  }, []);
  expect(
    (await createNeededTopics(denied.admin, settings, { partitions: -1, replicationFactor: -1, leaderWaitMs: 60_000, unlistedMs: 300 })).map((o) => o.outcome),
  ).toEqual(['created', 'created']);
  expect(denied.askedByName()).toBe(2);
});
