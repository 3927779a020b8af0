import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const STACK = path.resolve(__dirname, '../../scripts/stack.sh');

/**
 * A FerretDB of the test's own, on its own port and data folder, for tests that stop and start
 * the database: the shared stack must stay up for every other test file. It is started and
 * stopped through the project's stack script, as an operator would.
 */
export async function privateDatabase(port: number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'cag-db-'));
  // Without MONGO_URL/KAFKA_BROKERS the script manages the processes itself.
  const env = { ...process.env, STACK_DIR: dir, STACK_MONGO_PORT: String(port), MONGO_URL: '', KAFKA_BROKERS: '' };
  const script = (cmd: string) => run('bash', [STACK, cmd], { env, timeout: 60000 });
  await script('start-db');
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    stop: () => script('stop-db'),
    start: () => script('start-db'),
    async remove() {
      await script('stop-db').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
