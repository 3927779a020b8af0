import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { KAFKA_BROKERS, SCHEMA_REGISTRY_URL } from './stack';

const ROOT = path.resolve(__dirname, '../..');

/** The producer environment's python: given by scripts/test.sh, else made (or found in its cache) now. */
export const openedxPython = () =>
  process.env.OPENEDX_PRODUCER_PYTHON || execFileSync('bash', [path.join(ROOT, 'scripts/openedx-producer.sh')], { encoding: 'utf8' }).trim();

export interface ProducedUser {
  id: number;
  is_active: boolean;
  username: string;
  email: string;
  name: string;
}
export type ProducerEvent =
  | { signal: 'registration' | 'login'; time: string; user: ProducedUser; copies?: number }
  | { signal: 'catalog'; time: string; catalog_info: Record<string, unknown>; copies?: number };

/** A secured cluster as edx-event-bus-kafka reaches one: its API key and secret (SASL PLAIN over TLS), and a CA file. */
export interface ProducerCluster {
  bootstrap_servers?: string;
  api_key?: string;
  api_secret?: string;
  ssl_ca_location?: string;
}

/**
 * Runs the real producer once (scripts/openedx-producer/produce.py: one Python process, flushed
 * before it exits); fails with its stderr. The local stack's broker unless `cluster` says otherwise.
 */
export function produceWithOpenedx(prefix: string, events: ProducerEvent[], cluster: ProducerCluster = {}): Promise<void> {
  const request = { bootstrap_servers: KAFKA_BROKERS, schema_registry_url: SCHEMA_REGISTRY_URL, topic_prefix: prefix, events, ...cluster };
  return new Promise((resolve, reject) => {
    const child = execFile(openedxPython(), [path.join(ROOT, 'scripts/openedx-producer/produce.py')], { timeout: 60000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`the Open edX producer failed (${err.message}):\n${stderr}`));
      else if (stdout.trim().split('\n').length !== events.length) reject(new Error(`the producer reported ${stdout}`));
      else resolve();
    });
    child.stdin!.end(JSON.stringify(request));
  });
}
