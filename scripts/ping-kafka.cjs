// Exits 0 when the Kafka broker at argv[2] answers a metadata request. Used by stack.sh to wait.
const { Kafka, logLevel } = require('kafkajs');
const admin = new Kafka({ brokers: [process.argv[2]], logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 1000 }).admin();
admin
  .connect()
  .then(() => admin.fetchTopicMetadata({ topics: [] }))
  .then(() => admin.disconnect().then(() => process.exit(0)))
  .catch(() => process.exit(1));
