import { ConfigError, loadConfig } from './config';
import { createLogger } from './log';
import { startService } from './runtime';

/** Process entry: configuration, then the service, then signal handling (docs/operations.md). */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.LOG_LEVEL);
  const aborter = new AbortController();
  let stopping = false;
  let running: Awaited<ReturnType<typeof startService>> | null = null;

  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    aborter.abort();
    // The ceiling docs/operations.md promises: whatever happens, the process is gone within 10 seconds.
    setTimeout(() => {
      log.error('shutdown took longer than 9.5 s; exiting');
      process.exit(1);
    }, 9500).unref();
    (running ? running.stop() : Promise.resolve()).then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  running = await startService(config, log, { signal: aborter.signal });
}

main().catch((err) => {
  process.stderr.write(`fatal: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
