import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * What of an error a log line keeps. A database driver's error carries more than its message:
 * PostgreSQL's `detail` and `where` quote the row (`Key (id)=(...)`) and the statement, and a
 * query builder's error may hold the parameters, values among them. The names of what failed
 * stay; what it held does not.
 */
const ERROR_FIELDS = ['type', 'message', 'stack', 'code', 'errno', 'syscall', 'severity', 'routine', 'schema', 'table', 'column', 'constraint'];

export function logSafeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const full = pino.stdSerializers.err(err) as unknown as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const field of ERROR_FIELDS) if (full[field] !== undefined) kept[field] = full[field];
  return kept;
}

/**
 * Key headers and API keys are redacted at the logger, so no code path can leak them by
 * logging a request; errors keep only the fields that name what failed (`logSafeError`).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      serializers: { err: logSafeError },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-encryption-key"]',
          'req.headers["x-decryption-key"]',
          'headers.authorization',
          'headers["x-encryption-key"]',
          'headers["x-decryption-key"]',
          '*.apiKey',
          '*.privateKey',
          '*.value',
          // Node's parser hands a request it could not parse to Fastify's client-error handler,
          // which logs it at trace with its bytes: headers, key headers and body included.
          '*.rawPacket',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
