// How the consumer cuts a partition's backlog into runs (consumers/consumer.ts): the batch path is
// offered each message once. A fetch cut short by the hold (messages handled alone for a second)
// brings the rest again, and the batch path took none of them the first time; offering them again
// would cost a whole run's reads at every fetch to take nothing. Against the real local Kafka, with
// test handlers standing in for the event handlers.
import type { KafkaMessage } from 'kafkajs';
import type { BatchHandler } from '../../consumers/batch';
import type { MessageHandler } from '../../consumers/consumer';
import { closeProducer, type EventTestService, kafka, produce, startEventService, waitFor } from '../helpers/events';
import { uniqueName } from '../helpers/stack';

const MESSAGES = 40;
/** Per message handled alone: 40 take 4 s, so the 1 s hold cuts the backlog's fetch at least 3 times. */
const ALONE_MS = 100;

const appliedAlone: number[] = [];
const offered: number[] = [];
const handle: MessageHandler = async ({ message }: { message: KafkaMessage }) => {
  await new Promise((r) => setTimeout(r, ALONE_MS));
  appliedAlone.push(Number(message.offset));
};
/** Offered a run, takes none of it: every message then goes alone. */
const handleBatch: BatchHandler = async ({ messages }) => {
  for (const m of messages) offered.push(Number(m.offset));
  return new Set();
};

let topic: string;
let service: EventTestService;

beforeAll(async () => {
  topic = uniqueName('runs');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  await produce(
    topic,
    Array.from({ length: MESSAGES }, (_, i) => ({ key: `k${i}`, value: `m${i}` })),
  );
  service = await startEventService({ KAFKA_TOPICS: topic, LOG_LEVEL: 'debug', EVENT_BATCH_SIZE: '500' }, { handle, handleBatch });
}, 60000);
afterAll(async () => {
  await closeProducer();
  await service?.close();
}, 30000);

test('a backlog the batch path takes none of is offered to it once, then handled alone in order across the fetches the hold cuts it into', async () => {
  await waitFor(
    async () => appliedAlone.length,
    (n) => n >= MESSAGES,
    60000,
  );
  expect(appliedAlone).toEqual(Array.from({ length: MESSAGES }, (_, i) => i));
  // Offered at most once each (a fetch of one new message alone is not offered: nothing to gain).
  expect(offered.length).toBe(new Set(offered).size);
  expect(offered.length).toBeGreaterThanOrEqual(MESSAGES - 1);
  // The hold did cut it: the messages were handled in several runs, each from a new fetch.
  const runs = service.logs.filter((line) => line.includes('"msg":"run handled"'));
  expect(runs.length).toBeGreaterThanOrEqual(3);
}, 90000);
