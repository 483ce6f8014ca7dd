/**
 * One keep-alive undici Pool per vault, JSON in and out, the vault's errors as
 * VaultApiError, aborts as VaultAbortError, and retries of idempotent requests when no
 * answer arrived.
 */
import { STATUS_CODES } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { VaultAbortError, VaultApiError, VaultClientClosedError, VaultNetworkError } from './errors.js';

export interface RetryOptions {
  /** Extra attempts after the first, a whole number; default 3. */
  retries?: number;
  /** First backoff delay; default 100 ms. Doubles per attempt, with jitter. */
  minDelayMs?: number;
  /** Backoff ceiling; default 2000 ms. */
  maxDelayMs?: number;
}

export interface TransportOptions {
  /** Base URL, e.g. `http://127.0.0.1:8083` (a path prefix is kept). */
  url: string;
  /** Connections kept to the vault; default 10. */
  connections?: number;
  /** Time to establish a connection; default 10 s. */
  connectTimeout?: number;
  /** Time until the answer's headers arrive; default 30 s. */
  headersTimeout?: number;
  /** Longest pause between two chunks of the answer's body; default 30 s. */
  bodyTimeout?: number;
  /**
   * Keep connections open between requests (default true). An object tunes it:
   * `timeout` is how long an idle connection is kept when the server does not say
   * (default 4 s), `maxTimeout` caps what the server's keep-alive hint may ask for.
   */
  keepAlive?: boolean | { timeout?: number; maxTimeout?: number };
  /**
   * Retries of requests that got no answer: idempotent ones on any connection error, the
   * others only when the connection was never made (nothing was sent); `false` turns them off.
   */
  retry?: RetryOptions | false;
  /** TLS options for `https` URLs (`ca`, `cert`, `key`, `rejectUnauthorized`, ...). */
  tls?: Record<string, unknown>;
  userAgent?: string;
}

export interface Request {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Already encoded path, relative to the base URL. */
  path: string;
  query?: Record<string, string | number | boolean | Date | undefined>;
  body?: unknown;
  headers?: Record<string, string | undefined>;
  /** Safe to send again when no answer arrived. */
  idempotent: boolean;
  /** `false`: sent once whatever happens, for callers that retry by themselves. */
  retry?: false;
  signal?: AbortSignal;
  /** Answers (other than 2xx) that are results rather than errors, e.g. 503 from /readyz. */
  acceptStatus?: number[];
}

export interface Response<T> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
}

/** Errors that mean the request got no answer: the only ones an idempotent request is retried on. */
const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Errors raised before a connection existed: the request never left, so any request, a store
 * included, may be sent again. A reset or a timeout after connecting proves nothing.
 */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/** Errors undici raises for the call's own arguments (a header value it cannot send): the caller's, not the network's. */
const CALLER_ERRORS = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED']);

function connectionErrorCode(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown; errors?: unknown } | undefined, depth = 0; e && depth < 5; depth++) {
    if (typeof e.code === 'string' && CONNECTION_ERRORS.has(e.code)) return e.code;
    // Happy-eyeballs connects report an AggregateError of the per-address failures.
    if (Array.isArray(e.errors)) {
      const inner = e.errors.map(connectionErrorCode).find(Boolean);
      if (inner) return inner;
    }
    e = e.cause as typeof e;
  }
  return undefined;
}

function encodeQuery(query: Request['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    params.set(name, value instanceof Date ? value.toISOString() : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

function parseRetryAfter(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

export function backoffDelay(attempt: number, retry: Required<RetryOptions>): number {
  const ceiling = Math.min(retry.maxDelayMs, retry.minDelayMs * 2 ** attempt);
  // Half fixed, half random: spreads out clients that failed together without ever waiting 0.
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/**
 * The retry options with their defaults. A member given as `undefined` (an unset setting)
 * keeps its default, and a value that is no count or delay is refused: NaN attempts would
 * retry a call without end, NaN delays without a pause.
 */
function retryOptions(given: RetryOptions = {}): Required<RetryOptions> {
  const { retries = 3, minDelayMs = 100, maxDelayMs = 2000 } = given;
  if (!Number.isInteger(retries) || retries < 0) throw new RangeError('retry.retries must be a whole number, 0 or more');
  for (const [name, delay] of Object.entries({ minDelayMs, maxDelayMs })) requireDelay(`retry.${name}`, delay);
  return { retries, minDelayMs, maxDelayMs };
}

/** A delay option the client can wait for: a finite number of milliseconds, 0 or more; else a RangeError naming it. */
export function requireDelay(name: string, delay: unknown): void {
  if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) throw new RangeError(`${name} must be a number of milliseconds, 0 or more`);
}

/** Undici's refusals of a request on a pool already closed: the request was not sent. */
const POOL_CLOSED = new Set(['UND_ERR_CLOSED', 'UND_ERR_DESTROYED']);

export function closedError(request: Request, attempts: number): VaultClientClosedError {
  const path = request.path.split('?')[0];
  const message =
    attempts === 0
      ? `${request.method} ${path} was not sent: the vault client is closed`
      : `${request.method} ${path} was not sent again: the vault client was closed while it waited to retry (${attempts} attempt${attempts === 1 ? '' : 's'} sent)`;
  return new VaultClientClosedError({ closed: 'client', message, method: request.method, path, attempts });
}

function aborted(request: Request, attempts: number, cause: unknown): VaultAbortError {
  return new VaultAbortError({ method: request.method, path: request.path.split('?')[0], attempts, reason: request.signal?.reason, cause });
}

export class Transport {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly retry: Required<RetryOptions>;
  private readonly reset: boolean;
  private readonly userAgent: string;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Ends a wait between retries at close(), rather than retrying on a closed pool after it. */
  private readonly closer = new AbortController();

  constructor(options: TransportOptions) {
    const url = new URL(options.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`Vault URL must be http or https: ${url.protocol}`);
    this.basePath = url.pathname.replace(/\/+$/, '');
    const keepAlive = options.keepAlive ?? true;
    const tuning = typeof keepAlive === 'object' ? keepAlive : {};
    this.reset = keepAlive === false;
    this.retry = options.retry === false ? { retries: 0, minDelayMs: 0, maxDelayMs: 0 } : retryOptions(options.retry);
    this.userAgent = options.userAgent ?? '@sensitive-data-vault/sdk';
    this.pool = new Pool(url.origin, {
      connections: options.connections ?? 10,
      headersTimeout: options.headersTimeout ?? 30_000,
      bodyTimeout: options.bodyTimeout ?? 30_000,
      keepAliveTimeout: tuning.timeout ?? 4_000,
      keepAliveMaxTimeout: tuning.maxTimeout ?? 600_000,
      connect: { timeout: options.connectTimeout ?? 10_000, ...(options.tls ?? {}) },
    });
  }

  async send<T>(request: Request): Promise<Response<T>> {
    if (this.closed) throw closedError(request, 0);
    const path = this.basePath + request.path;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.userAgent };
    for (const [name, value] of Object.entries(request.headers ?? {})) if (value !== undefined) headers[name] = value;
    let payload: string | undefined;
    if (request.body !== undefined) {
      payload = JSON.stringify(request.body);
      headers['content-type'] = 'application/json';
    }
    const maxAttempts = request.retry === false ? 1 : this.retry.retries + 1;
    const { signal } = request;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw aborted(request, attempt - 1, signal.reason);
      if (this.closed) throw closedError(request, attempt - 1);
      try {
        return await this.once<T>(request, path, headers, payload);
      } catch (err) {
        if (err instanceof VaultApiError) {
          (err as { attempts: number }).attempts = attempt;
          throw err;
        }
        // Before the codes: an abort can surface as the reset it caused, and must not be retried.
        if (signal?.aborted) throw aborted(request, attempt, err);
        const own = (err as { code?: unknown } | undefined)?.code;
        // close() came between the check above and the pool taking the request.
        if (this.closed && typeof own === 'string' && POOL_CLOSED.has(own)) throw closedError(request, attempt - 1);
        const code = connectionErrorCode(err);
        if (code === undefined) {
          if (typeof own === 'string' && CALLER_ERRORS.has(own)) throw err;
          // A certificate not trusted, TLS to a plain port, an answer that is not HTTP: no
          // answer arrived all the same. Sending again would meet the same failure.
          const name = typeof own === 'string' ? own : err instanceof Error ? err.name : 'UNKNOWN';
          throw new VaultNetworkError({ code: name, method: request.method, path: request.path.split('?')[0], attempts: attempt, cause: err });
        }
        if (attempt >= maxAttempts || !(request.idempotent || NOT_SENT.has(code))) throw new VaultNetworkError({ code, method: request.method, path: request.path.split('?')[0], attempts: attempt, cause: err });
        // Not AbortSignal.any: joined to the long-lived closer signal, each one leaks (nodejs/node#55351).
        const wake = new AbortController();
        const stop = () => wake.abort();
        signal?.addEventListener('abort', stop, { once: true });
        this.closer.signal.addEventListener('abort', stop, { once: true });
        if (signal?.aborted || this.closed) stop();
        try {
          await sleep(backoffDelay(attempt - 1, this.retry), undefined, { signal: wake.signal });
        } catch (abort) {
          if (signal?.aborted) throw aborted(request, attempt, abort);
          throw closedError(request, attempt);
        } finally {
          signal?.removeEventListener('abort', stop);
          this.closer.signal.removeEventListener('abort', stop);
        }
      }
    }
  }

  private async once<T>(request: Request, path: string, headers: Record<string, string>, payload: string | undefined): Promise<Response<T>> {
    const res = await this.pool.request({
      method: request.method,
      path: path + encodeQuery(request.query),
      headers,
      body: payload,
      signal: request.signal,
      reset: this.reset,
    });
    // Read the whole body before anything else, so the connection goes back to the pool.
    const text = await res.body.text();
    const type = String(res.headers['content-type'] ?? '');
    let body: unknown = text;
    if (type.includes('json') && text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const ok = (res.statusCode >= 200 && res.statusCode < 300) || request.acceptStatus?.includes(res.statusCode);
    if (ok) return { status: res.statusCode, headers: res.headers, body: body as T };
    const fields = typeof body === 'object' && body !== null ? (body as { message?: unknown; index?: unknown }) : {};
    throw new VaultApiError({
      status: res.statusCode,
      message: typeof fields.message === 'string' ? fields.message : (STATUS_CODES[res.statusCode] ?? `HTTP ${res.statusCode}`),
      method: request.method,
      path: request.path.split('?')[0],
      body,
      index: typeof fields.index === 'number' ? fields.index : undefined,
      retryAfter: parseRetryAfter(res.headers['retry-after']),
    });
  }

  /**
   * Refuses new calls at once; calls already handed to the pool (sent, or queued for a
   * connection) are answered before the connections close, and the promise resolves then.
   */
  close(): Promise<void> {
    this.closed = true;
    this.closer.abort();
    // A second close() resolves when the connections are closed, not before.
    this.closing ??= this.pool.close();
    return this.closing;
  }
}
