import pino from 'pino';

/**
 * The one pino logger. Redaction is a safety net: code never passes tokens or emails to it,
 * but if a header or a user document slips into a log call, those fields are blanked.
 */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', destination?: pino.DestinationStream) {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'course-access-groups' },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', 'email', '*.email', 'pii', '*.pii'],
      censor: '[redacted]',
    },
  };
  // A destination is for tests that read what was logged; the service logs to stdout.
  return destination ? pino(options, destination) : pino(options);
}

export type Logger = pino.Logger;
