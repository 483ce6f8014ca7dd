/**
 * The ways a call fails. The vault answered with an error (`VaultApiError`, carrying
 * the vault's exact message) or with a 2xx body the client cannot use (`VaultApiError` with
 * that status), no answer arrived at all (`VaultNetworkError`), or the caller's signal ended
 * the call (`VaultAbortError`). Callers branch on the class: only the last two can mean "the
 * request may not have happened". A key the vault would refuse is a `VaultKeyError`, thrown
 * before anything is sent; a call after `close()` is a `VaultClientClosedError`.
 */

export class VaultApiError extends Error {
  override readonly name = 'VaultApiError';
  /** HTTP status of the answer. */
  readonly status: number;
  /** Position of the failing event in a bulk audit request. */
  readonly index?: number;
  readonly method: string;
  /** Request path, without query string. */
  readonly path: string;
  /** The parsed error body as the vault sent it (or its text when it was not JSON). */
  readonly body: unknown;
  /** Seconds the vault asked to wait (429, 503), when it said. */
  readonly retryAfter?: number;
  /**
   * Requests sent before this answer. Above 1, an earlier attempt may have been carried out
   * without its answer arriving: a retried DELETE answering 404 has usually done its work.
   */
  readonly attempts: number = 1;

  constructor(init: { status: number; message: string; method: string; path: string; body?: unknown; index?: number; retryAfter?: number }) {
    // The message is exactly the vault's: callers compare it with the interface's texts.
    super(init.message);
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
    this.body = init.body;
    if (init.index !== undefined) this.index = init.index;
    if (init.retryAfter !== undefined) this.retryAfter = init.retryAfter;
  }
}

export class VaultNetworkError extends Error {
  override readonly name = 'VaultNetworkError';
  /**
   * The transport's error code: `ECONNREFUSED`, `ECONNRESET`, `UND_ERR_HEADERS_TIMEOUT`, a TLS
   * failure such as `DEPTH_ZERO_SELF_SIGNED_CERT`, `HTTPParserError` for an answer that is not
   * HTTP, ...; `REPORTER_CLOSE_TIMEOUT` for events a reporter's `close()` gave up on.
   */
  readonly code: string;
  readonly method: string;
  readonly path: string;
  /**
   * How many times the request was tried: more than one for idempotent requests, and for any
   * request refused before it could be sent. With `code` `ECONNREFUSED` (or `ENOTFOUND`,
   * `EAI_AGAIN`, `UND_ERR_CONNECT_TIMEOUT`) the request was certainly not carried out.
   */
  readonly attempts: number;

  constructor(init: { code: string; method: string; path: string; attempts: number; cause: unknown; message?: string }) {
    super(init.message ?? `${init.method} ${init.path} failed without an answer from the vault (${init.code}, ${init.attempts} attempt${init.attempts === 1 ? '' : 's'})`, {
      cause: init.cause,
    });
    this.code = init.code;
    this.method = init.method;
    this.path = init.path;
    this.attempts = init.attempts;
  }
}

/**
 * The call's `signal` was aborted: by its `AbortController`, or an `AbortSignal.timeout()` ran
 * out (`timedOut`). Never retried: the caller asked to stop. Its `name` is the DOM's
 * (`AbortError`, `TimeoutError` for a timeout), so code written for fetch's aborts still
 * recognises it; `cause` is what the transport threw.
 */
export class VaultAbortError extends Error {
  override readonly name: 'AbortError' | 'TimeoutError';
  /** The signal was an `AbortSignal.timeout()` (or was aborted with a `TimeoutError`). */
  readonly timedOut: boolean;
  /** The signal's `reason`, as the caller gave it. */
  readonly reason: unknown;
  readonly method: string;
  readonly path: string;
  /**
   * Requests started before the abort. 0: the signal was aborted before anything was sent.
   * Otherwise the vault may have carried the last one out, as after a `VaultNetworkError`.
   */
  readonly attempts: number;

  constructor(init: { method: string; path: string; attempts: number; reason: unknown; cause: unknown }) {
    const timedOut = (init.reason as { name?: unknown } | null)?.name === 'TimeoutError';
    super(`${init.method} ${init.path} ${timedOut ? 'timed out' : 'was aborted'} by the caller's signal (${init.attempts} attempt${init.attempts === 1 ? '' : 's'} sent)`, {
      cause: init.cause,
    });
    this.name = timedOut ? 'TimeoutError' : 'AbortError';
    this.timedOut = timedOut;
    this.reason = init.reason;
    this.method = init.method;
    this.path = init.path;
    this.attempts = init.attempts;
  }
}

/**
 * A call after `close()`: any method of a closed client (every endpoint, `request()`,
 * `reporter()`), or `report()` on a closed reporter (closed by itself or with its client).
 * `attempts` 0: nothing was sent. A call waiting to be retried when the client closed ends
 * with it too, after `attempts` requests: the last may have been carried out, as after a
 * `VaultNetworkError`. Calls already sent when `close()` began are answered first.
 */
export class VaultClientClosedError extends Error {
  override readonly name = 'VaultClientClosedError';
  readonly code = 'CLIENT_CLOSED';
  /** What was closed: the client, or the reporter `report()` was called on. */
  readonly closed: 'client' | 'reporter';
  /** The request refused, when it was one (not for `report()` or `reporter()`). */
  readonly method?: string;
  readonly path?: string;
  readonly attempts: number;

  constructor(init: { closed: 'client' | 'reporter'; message: string; method?: string; path?: string; attempts?: number }) {
    super(init.message);
    this.closed = init.closed;
    if (init.method !== undefined) this.method = init.method;
    if (init.path !== undefined) this.path = init.path;
    this.attempts = init.attempts ?? 0;
  }
}

/**
 * A key given to the SDK (an option, a per-call override, an environment variable, a file)
 * that the vault would refuse, found before any request: not an RSA key of the right kind, or
 * a PEM with text before or after it, or two keys. `source` names where the key came from; the
 * message never quotes the key, which may be a private one.
 */
export class VaultKeyError extends Error {
  override readonly name = 'VaultKeyError';
  /** `encryptionKey`, `decryptionKey`, the environment variable or the file the key came from (`Key` for `toPem`). */
  readonly source: string;

  constructor(init: { source: string; message: string }) {
    super(init.message);
    this.source = init.source;
  }
}

export function isVaultApiError(err: unknown, status?: number, message?: string): err is VaultApiError {
  return err instanceof VaultApiError && (status === undefined || err.status === status) && (message === undefined || err.message === message);
}
