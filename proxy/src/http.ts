import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { findStringDefect } from './ingest/validate.js';

/**
 * How the sidecar's own API reads bodies and answers what it cannot take. The messages are the
 * vault's (core/src/http), so a client sees one wording whichever of the two it talks to, and
 * every refusal is a 4xx that names the problem: a client that retries on 5xx must never be
 * sent into an endless loop by a body that can never pass.
 */

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const messages = {
  invalidJson: 'Body is not valid JSON',
  forbiddenProperty: 'Body contains a forbidden property name',
  nul: 'Strings may not contain NUL characters',
  surrogate: 'Strings may not contain unpaired surrogates',
  invalidUtf8: 'Body is not valid UTF-8',
  tooLarge: 'Request body is too large',
  mediaType: 'Content type must be application/json',
  charset: 'Content type charset must be utf-8',
} as const;

export function errorBody(statusCode: number, message: string) {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

/** Node's codes for what its parser refused, and the answers Fastify gives them. */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Client Timeout'],
  HPE_HEADER_OVERFLOW: [431, 'Exceeded maximum allowed HTTP header size'],
};

/**
 * Fastify's answers to a request Node's parser refused (408, 431, 400) close the connection
 * without saying so, and a keep-alive client's next request down it failed with ECONNRESET:
 * the same answers, with `Connection: close` (as the vault's, core/src/http/errors.ts).
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
 * the sidecar takes is told 413 at once, as the vault does (core/src/http/errors.ts): Node's
 * default answer, `100 Continue`, had it upload the whole body only to be refused after it.
 * The request never reaches Fastify, so the answer is shaped here as the error handler would.
 */
export function refuseOversizedContinue(server: Server, bodyLimit: number): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (Number(request.headers['content-length']) > bodyLimit) {
      const refusal = errorBody(413, messages.tooLarge);
      const body = JSON.stringify(request.url?.startsWith('/events') ? { accepted: [], rejected: [], ...refusal } : refusal);
      response.writeHead(413, { connection: 'close', 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      response.end(body);
      return;
    }
    response.writeContinue();
    server.emit('request', request, response);
  });
}

/** Charsets whose text is read exactly as UTF-8: UTF-8 itself, and ASCII, a subset of it. */
export const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/** Every `charset` parameter of a Content-Type, lower-cased and unquoted, in order (none: JSON is UTF-8). */
export function charsetLabels(contentType: string | undefined): string[] {
  const labels: string[] = [];
  for (const parameter of (contentType ?? '').split(';').slice(1)) {
    const at = parameter.indexOf('=');
    if (at === -1 || parameter.slice(0, at).trim().toLowerCase() !== 'charset') continue;
    labels.push(parameter.slice(at + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase());
  }
  return labels;
}

/** Whether every `charset` parameter of a Content-Type names UTF-8 (none is fine). */
export function utf8Charset(contentType: string | undefined): boolean {
  return charsetLabels(contentType).every((label) => UTF8_CHARSETS.has(label));
}

/**
 * JSON only. What the vault refuses is refused here too, whole, rather than accepted and left
 * to end up as a dead letter no replay can mend: prototype-poisoning keys, bytes that are not
 * UTF-8, NUL characters and unpaired surrogates; and, with a 415 as the vault's, a body
 * labelled with another charset (`charset=latin1`), which read as UTF-8 would be queued as
 * something other than what the client meant. An empty body is no body (POST
 * /deadletters/replay replays everything), whatever its charset.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw, done) => {
    const bytes = raw as Buffer;
    if (!utf8Charset(request.headers['content-type'])) {
      return done(bytes.toString('latin1').trim() === '' ? null : new HttpError(415, messages.charset), undefined);
    }
    if (!isUtf8(bytes)) return done(new HttpError(400, messages.invalidUtf8), undefined);
    const text = bytes.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    let body: unknown;
    try {
      body = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      const poisoned = /forbidden (prototype|constructor) property/.test((err as Error).message);
      return done(new HttpError(400, poisoned ? messages.forbiddenProperty : messages.invalidJson), undefined);
    }
    // Unescaped control characters are invalid JSON, so a NUL can only arrive escaped; a
    // lone surrogate too, since the bytes are UTF-8. Only such a body is walked.
    if (text.includes('\\u0000') || /\\u[dD][89a-fA-F]/.test(text)) {
      const defect = findStringDefect(body);
      if (defect) return done(new HttpError(400, defect === 'nul' ? messages.nul : messages.surrogate), undefined);
    }
    done(null, body);
  });
  app.addHook('onRequest', async (request) => {
    if (request.url.includes('%00') || request.url.includes('\u0000')) throw new HttpError(400, messages.nul);
  });
}

/** Status and message for any failure; 5xx only for our own faults, and never with a stack. */
export function describeFailure(err: FastifyError | HttpError): { statusCode: number; message: string } {
  if (err instanceof HttpError) return { statusCode: err.statusCode, message: err.message };
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
  if (status >= 500) return { statusCode: status, message: 'Internal Server Error' };
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { statusCode: 413, message: messages.tooLarge };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { statusCode: 415, message: messages.mediaType };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { statusCode: 400, message: messages.invalidJson };
    default:
      return { statusCode: status, message: err instanceof SyntaxError ? messages.invalidJson : err.message };
  }
}

/** How much of a body refused as too large is read and thrown away, at most, before the 413. */
const DISCARD_BYTES = 64 * 1024 * 1024;
const DISCARD_MS = 30_000;

/**
 * Reads the rest of a body refused as too large, so its 413 reaches the client, as the vault
 * does (core/src/http/errors.ts): answered at once, the connection closed while the client was
 * still sending, and the client saw its own write fail (EPIPE, ECONNRESET) instead, which it
 * retries as an outage. Beyond the bounds the connection just closes.
 */
export function discardBody(raw: NodeJS.ReadableStream & { readableEnded?: boolean; destroyed?: boolean }): Promise<void> {
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

/**
 * Node's bounds on receiving a request, as the vault sets them (core/src/http/server.ts):
 * Fastify turns Node's request timeout off, which lets a caller that trickles a body hold its
 * connection and the body's buffer forever. Node looks for late requests every
 * `connectionsCheckingInterval`, so a short timeout needs a shorter interval.
 */
export function receiving(requestTimeoutMs: number): { requestTimeout: number; http: { headersTimeout?: number; connectionsCheckingInterval?: number } } {
  if (requestTimeoutMs === 0) return { requestTimeout: 0, http: {} };
  return {
    requestTimeout: requestTimeoutMs,
    http: { headersTimeout: Math.min(60_000, requestTimeoutMs), connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 4))) },
  };
}

/**
 * A request's id, as the vault gives it (core/src/http/server.ts): the caller's or a proxy's
 * `X-Request-Id` when it is a plain token, else a new UUID. Fastify's default (`req-1`, …)
 * repeats across processes and restarts.
 */
const PLAIN_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;
export function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && PLAIN_REQUEST_ID.test(given) ? given : randomUUID();
}
