import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * Event values, the vault API key and the ingest token must never reach the logs. Code only logs ids, counts
 * and status codes; the redaction list is a second line of defence for anything that slips
 * through (a whole event, a request's headers).
 */
export const redactPaths = [
  'apiKey',
  '*.apiKey',
  'ingestToken',
  '*.ingestToken',
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'value',
  '*.value',
  'data.value',
  '*.data.value',
  'event',
  '*.event',
  'events',
  '*.events',
];

/**
 * What of an error a log line keeps: what failed and where, never what it held (an error may
 * carry the request's events among its own properties). Anything but an Error stays as given.
 */
export function logSafeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  return { type: err.name, message: err.message, stack: err.stack, ...(typeof code === 'string' ? { code } : {}) };
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      name: 'vault-sidecar',
      level,
      serializers: { err: logSafeError },
      redact: { paths: redactPaths, censor: '[redacted]' },
    },
    destination,
  );
}
