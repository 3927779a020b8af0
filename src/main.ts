import type { Running } from './runtime';

/**
 * Process entry: signal handling, configuration, then the service (SPEC section 6).
 *
 * The signal handlers come first, before the service's modules load: a signal that arrives
 * meanwhile would otherwise kill the process (or, as PID 1 in a container, be ignored), and
 * SIGTERM and SIGINT must end it with exit code 0 within 10 seconds in every state.
 */
let stopSignal: string | null = null;
let onSignal: (signal: string) => void = (signal) => {
  stopSignal ??= signal;
};
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGINT', () => onSignal('SIGINT'));

/** The SPEC's ceiling: whatever happens, the process is gone within 10 seconds. */
const STOP_CEILING_MS = 9500;

async function main(): Promise<void> {
  const { ConfigError, loadConfig } = await import('./config');
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
  const { createLogger } = await import('./log');
  const log = createLogger(config.LOG_LEVEL);
  log.info({ role: config.SERVICE_ROLE }, 'starting');
  const aborter = new AbortController();
  let starting: Promise<Running> | null = null;

  const shutdown = async (signal: string) => {
    log.info({ signal }, 'shutting down');
    aborter.abort();
    setTimeout(() => {
      log.error(`shutdown took longer than ${STOP_CEILING_MS / 1000} s; exiting`);
      process.exit(1);
    }, STOP_CEILING_MS).unref();
    try {
      // A start under way finishes listening first (a few milliseconds), then everything stops.
      const running = await starting?.catch(() => null);
      await running?.stop();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error while stopping');
      process.exit(1);
    }
  };
  onSignal = (signal) => {
    if (stopSignal !== null) return;
    stopSignal = signal;
    void shutdown(signal);
  };
  // A signal that came while the modules loaded.
  if (stopSignal !== null) return shutdown(stopSignal);

  const { startService } = await import('./runtime');
  if (stopSignal !== null) return; // shutdown() is under way and exits
  starting = startService(config, log, { signal: aborter.signal });
  try {
    await starting;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`); // PORT taken: a setting to change, as above
      process.exit(2);
    }
    throw err;
  }
}

main().catch((err) => {
  process.stderr.write(`fatal: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
