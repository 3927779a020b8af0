import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { builtProgram } from './built';
import { waitFor } from './events';
import { client } from './http';
import { TEST_JWT_SECRET } from './stack';

const ROOT = path.resolve(__dirname, '../..');

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process wrote (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

/**
 * The service as production runs it: `src/main.ts` in a child process (through tsx), or with
 * `built` the compiled program as the image runs it (dist/src/main.js, built first when stale),
 * configured by environment only, so signals and SIGKILL hit a real process.
 */
export function spawnService(env: Record<string, string>, opts: { built?: boolean } = {}): ServiceProcess {
  const child = spawn(process.execPath, opts.built ? [builtProgram('src/main.js')] : ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  return { child, output: () => out, exited };
}

/** SIGKILLs each of `processes` still running (a test's afterAll: nothing outlives the file). */
export function killAll(processes: ServiceProcess[]): void {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
}

/**
 * The base URL of an API process once it listens (its log says on which port, within
 * `listenMs`) and answers `GET /readyz` 200 (within a minute).
 */
export async function readyBaseUrl(p: ServiceProcess, listenMs = 30000): Promise<string> {
  const port = await waitFor(async () => /"msg":"listening"/.test(p.output()) && Number(/"port":(\d+)/.exec(p.output())![1]), Boolean, listenMs);
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitFor(
    () => client(baseUrl).get('/readyz'),
    (r) => r.status === 200,
    60000,
  );
  return baseUrl;
}
