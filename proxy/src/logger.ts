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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      name: 'vault-sidecar',
      level,
      redact: { paths: redactPaths, censor: '[redacted]' },
    },
    destination,
  );
}
