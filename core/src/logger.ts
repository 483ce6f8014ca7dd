import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * Key headers and API keys are redacted at the logger, so no code path can leak them by
 * logging a request.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
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
