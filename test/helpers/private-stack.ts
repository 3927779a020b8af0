import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const STACK = path.resolve(__dirname, '../../scripts/stack.sh');

/**
 * A server of the test's own (FerretDB or Kafka), on its own ports and data folder, for tests
 * that stop and start it: the shared stack must stay up for every other test file. It is
 * started and stopped through the project's stack script, as an operator would; data survive a
 * stop and start (a restart, not a new server) until `remove`.
 */
function privateServer(kind: 'db' | 'kafka', prefix: string, env: Record<string, string>) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  // Without MONGO_URL/KAFKA_BROKERS the script manages the processes itself.
  const scriptEnv = { ...process.env, ...env, STACK_DIR: dir, MONGO_URL: '', KAFKA_BROKERS: '' };
  const script = (cmd: string, ...args: string[]) => run('bash', [STACK, cmd, ...args], { env: scriptEnv, timeout: 120000 });
  return {
    /** Runs another command of the stack script against this server (e.g. `scram-user NAME PASSWORD`). */
    command: (cmd: string, ...args: string[]) => script(cmd, ...args).then(() => undefined),
    start: () => script(`start-${kind}`).then(() => undefined),
    stop: () => script(`stop-${kind}`).then(() => undefined),
    async remove() {
      await script(`stop-${kind}`).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A private FerretDB on `port`, started; `env` adds stack settings (STACK_MONGO_TLS_PORT...). */
export async function privateDatabase(port: number, env: Record<string, string> = {}) {
  const server = privateServer('db', 'cag-db-', { STACK_MONGO_PORT: String(port), ...env });
  await server.start();
  return { url: `mongodb://127.0.0.1:${port}/`, ...server };
}

/**
 * A private Kafka KRaft node (broker on `port`, controller on `controllerPort`), NOT started:
 * tests start it when their scenario needs it (a service may come up before its broker). A
 * small heap, as two of them may run beside the shared stack on a 2-core machine, and the JVM's
 * quick compiler alone (`-XX:TieredStopAtLevel=1`, as stack.sh's own kafka-configs calls): a
 * test broker lives for seconds to a minute and carries a few thousand messages, so the
 * optimising compiler's work at start-up never pays back. It took the broker's CPU time to
 * ready from 7 s to 4 s, its wall time on the loaded 2-core machine from 73 s to 46 s.
 */
export function privateKafka(port: number, controllerPort: number, env: Record<string, string> = {}) {
  const server = privateServer('kafka', 'cag-kafka-', {
    STACK_KAFKA_PORT: String(port),
    STACK_KAFKA_CONTROLLER_PORT: String(controllerPort),
    STACK_KAFKA_HEAP: '256m',
    JAVA_TOOL_OPTIONS: `${process.env.JAVA_TOOL_OPTIONS ?? ''} -XX:TieredStopAtLevel=1`.trim(),
    ...env,
  });
  return { brokers: `127.0.0.1:${port}`, ...server };
}
