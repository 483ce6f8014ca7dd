import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import { storageFailure } from '../db/dialect.js';
import { INVALID_JSON_MESSAGE } from './json.js';
import { BUSY_MESSAGE, DATABASE_UNREACHABLE_MESSAGE, isVaultError, STORAGE_FULL_MESSAGE } from '../errors.js';

export function errorBody(status: number, message: string, details?: Record<string, unknown>) {
  return { statusCode: status, error: STATUS_CODES[status] ?? 'Error', message, ...details };
}

/** Node's codes for what its parser refused, and the answers Fastify gives them. */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Client Timeout'],
  HPE_HEADER_OVERFLOW: [431, 'Exceeded maximum allowed HTTP header size'],
};

/**
 * Fastify's answers to a request Node's parser refused (408, 431, 400) close the connection
 * without saying so: a keep-alive client (undici, the SDK) sent its next, unrelated request
 * down the closed connection and got ECONNRESET. The same answers, with `Connection: close`.
 */
export function answerClientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Client Error'];
  this.log.trace({ err }, `client error ${status}`);
  if (socket.writable) {
    const body = JSON.stringify(errorBody(status, message));
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/**
 * A client that asks before sending its body (`Expect: 100-continue`) and declares more than
 * the vault takes is told 413 at once. Node's default answer, `100 Continue`, had it upload the
 * whole body only to be refused after it.
 */
export function refuseOversizedContinue(server: Server, bodyLimit: number, log: FastifyBaseLogger): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (Number(request.headers['content-length']) > bodyLimit) {
      log.debug({ declared: request.headers['content-length'] }, 'body over the limit refused before it was sent');
      const body = JSON.stringify(errorBody(413, 'Request body is too large'));
      response.writeHead(413, { connection: 'close', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
      return;
    }
    response.writeContinue();
    server.emit('request', request, response);
  });
}

/**
 * A database that could not take the request: 503, since nothing of the request was kept (its
 * transaction rolled back) and a client may send it again. A lock held elsewhere or an outage
 * fails every request alike, so each gets one warning without a stack; a full disk is an error.
 */
const STORAGE_ANSWERS = {
  busy: { message: BUSY_MESSAGE, retryAfter: '1', warning: 'request failed: the database stayed locked, or kept ending it as a deadlock victim' },
  unreachable: { message: DATABASE_UNREACHABLE_MESSAGE, retryAfter: '5', warning: 'request failed: the database is unreachable' },
  full: { message: STORAGE_FULL_MESSAGE, retryAfter: '60', warning: undefined },
} as const;

/** How much of a refused body is read and thrown away, at most, before the answer is sent. */
const DISCARD_BYTES = 64 * 1024 * 1024;
const DISCARD_MS = 30_000;

/**
 * Reads the rest of a body refused as too large, so its 413 reaches the client: answered at
 * once, the connection closed while the client was still sending, and the client saw its own
 * write fail (EPIPE, ECONNRESET) instead of the answer, which a sidecar or SDK then retries
 * as an outage rather than splitting the batch. Beyond the bounds the connection just closes.
 */
function discardBody(raw: NodeJS.ReadableStream & { readableEnded?: boolean; destroyed?: boolean }): Promise<void> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      clearTimeout(timer);
      raw.removeListener('data', onData);
      raw.removeListener('end', done);
      raw.removeListener('close', done);
      raw.removeListener('error', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > DISCARD_BYTES) done();
    };
    const timer = setTimeout(done, DISCARD_MS);
    raw.on('data', onData);
    raw.once('end', done);
    raw.once('close', done);
    raw.once('error', done);
    raw.resume();
  });
}

/** Maps every failure to `{statusCode, error, message}`; nothing ever answers with a stack. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (isVaultError(err)) {
      return reply.status(err.status).send(errorBody(err.status, err.message, err.details));
    }
    if (err.validation) {
      return reply.status(400).send(errorBody(400, err.message));
    }
    const status = err.statusCode ?? 500;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return discardBody(request.raw).then(() => reply.status(413).send(errorBody(413, 'Request body is too large')));
    }
    if (status >= 400 && status < 500) {
      const message =
        err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? 'Content type must be application/json'
          : err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY'
            ? INVALID_JSON_MESSAGE
            : err.message;
      return reply.status(status).send(errorBody(status, message));
    }
    // Not the whole error: a database error's `detail` can quote the row's values (`Key (id)=(...)`).
    const { name, code, message, stack } = err as FastifyError & { code?: string };
    const storage = storageFailure(err);
    const answer = storage && STORAGE_ANSWERS[storage];
    if (answer?.warning) request.log.warn({ err: { type: name, code, message } }, answer.warning);
    else request.log.error({ err: { type: name, code, message, stack } }, 'request failed');
    if (answer) return reply.status(503).header('retry-after', answer.retryAfter).send(errorBody(503, answer.message));
    return reply.status(500).send(errorBody(500, 'Internal Server Error'));
  });
  app.setNotFoundHandler((request, reply) => reply.status(404).send(errorBody(404, 'Not Found')));
}
