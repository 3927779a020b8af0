// Issue #2: a message produced to the local Kafka reaches the service's consumer.
import { Kafka, logLevel } from 'kafkajs';
import { KAFKA_BROKERS, startTestService, type TestService } from '../helpers/stack';

let service: TestService;
const received: { topic: string; key: string | undefined; value: string | undefined }[] = [];

beforeAll(async () => {
  service = await startTestService(
    { SERVICE_ROLE: 'consumer' },
    {
      handle: async ({ topic, message }) => {
        received.push({ topic, key: message.key?.toString(), value: message.value?.toString() });
      },
    },
  );
}, 60000);
afterAll(() => service.close());

test('a produced message is handed to the consumer', async () => {
  const kafka = new Kafka({ brokers: KAFKA_BROKERS.split(','), logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  const topic = service.config.KAFKA_TOPICS[0]!;
  await producer.send({ topic, messages: [{ key: '42', value: '{"hello":"world"}' }] });
  await producer.disconnect();
  const deadline = Date.now() + 30000;
  while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(received).toEqual([{ topic, key: '42', value: '{"hello":"world"}' }]);
}, 40000);
