import pino from 'pino';

/**
 * The one pino logger. Redaction is a safety net: code never passes tokens or emails to it,
 * but if a header or a user document slips into a log call, those fields are blanked.
 */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info') {
  return pino({
    level,
    base: { service: 'course-access-groups' },
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'authorization',
        'token',
        'email',
        '*.email',
        'pii',
        '*.pii',
      ],
      censor: '[redacted]',
    },
  });
}

export type Logger = pino.Logger;
