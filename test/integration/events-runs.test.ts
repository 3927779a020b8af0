// How the consumer cuts a partition's backlog into runs (consumers/consumer.ts): the batch path is
// offered each message once. A fetch cut short by the hold (messages handled alone for a second)
// brings the rest of the run again: what the batch took then is done, what it left goes alone;
// offered again, the batch would read the whole run to take nothing. Against the real local Kafka,
// with test handlers standing in for the event handlers.
import type { BatchHandler } from '../../consumers/batch';
import type { MessageHandler } from '../../consumers/consumer';
import { closeProducer, type EventTestService, kafka, produce, startEventService, waitFor } from '../helpers/events';
import { uniqueName } from '../helpers/stack';

const MESSAGES = 40;
/** Per message handled alone: the 20 left take 2 s, so the 1 s hold cuts the backlog's fetch. */
const ALONE_MS = 100;

const appliedAlone: number[] = [];
const appliedTogether: number[] = [];
const offered: number[] = [];
const handle: MessageHandler = async ({ message }) => {
  await new Promise((r) => setTimeout(r, ALONE_MS));
  appliedAlone.push(Number(message.offset));
};
/** Offered a run, takes the messages of even offset: the odd ones then go alone. */
const handleBatch: BatchHandler = async ({ messages }) => {
  for (const m of messages) offered.push(Number(m.offset));
  const taken = messages.filter((m) => Number(m.offset) % 2 === 0);
  for (const m of taken) appliedTogether.push(Number(m.offset));
  return new Set(taken.map((m) => m.offset));
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

test('a backlog is offered to the batch path once: across the fetches the hold cuts it into, what the batch took is not applied again and what it left is applied alone, in order', async () => {
  const odd = Array.from({ length: MESSAGES / 2 }, (_, i) => 2 * i + 1);
  await waitFor(
    async () => appliedAlone.length,
    (n) => n >= odd.length,
    60000,
  );
  // In offset order, so one applied twice (an even one alone) would show before the last.
  expect(appliedAlone).toEqual(odd);
  expect(appliedTogether.sort((a, b) => a - b)).toEqual(odd.map((o) => o - 1));
  // Offered at most once each (a fetch of one new message alone is not offered: nothing to gain).
  expect(offered.length).toBe(new Set(offered).size);
  expect(offered.length).toBeGreaterThanOrEqual(MESSAGES - 1);
  // The hold did cut it: the messages were handled in several runs, each from a new fetch.
  const runs = service.logs.filter((line) => line.includes('"msg":"run handled"'));
  expect(runs.length).toBeGreaterThanOrEqual(2);
}, 90000);
