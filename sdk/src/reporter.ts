/**
 * Fire-and-forget activity reporting for applications whose data lives outside the vault.
 * Events are stamped on `report()` (eventId, timestamp, and a dataPointId for a STORE), so
 * the caller knows the ids at once and every resend is harmless: the vault records an
 * eventId once. Batches go to the sidecar (`POST /events`) or, without one, straight to
 * the vault (`POST /auditlogs/bulk`), one batch in flight at a time, in order.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { VaultApiError, VaultClientClosedError, VaultNetworkError } from './errors.js';
import { backoffDelay, requireDelay, Transport, type Request, type TransportOptions } from './transport.js';
import type { ExternalActivityEvent } from './types.js';

export const DEFAULT_SIDECAR_URL = 'http://127.0.0.1:8084';

/** An event as the reporter sends it: with its identity and time fixed. */
export type StampedEvent = ExternalActivityEvent & { eventId: string; timestamp: string };

/** Fields an event may leave to the reporter's defaults. */
type Defaultable = 'applicationId' | 'applicationUser' | 'dataStoreName' | 'dataStoreServer' | 'dataStoreEntityName' | 'location';
type WithOptional<T, K extends PropertyKey> = T extends unknown ? Omit<T, K & keyof T> & Partial<Pick<T, K & keyof T>> : never;
export type ReportableEvent = WithOptional<ExternalActivityEvent, Defaultable>;

export interface ReporterOptions {
  /**
   * The sidecar's ingest URL (`true`: http://127.0.0.1:8084). When unset, events go to the
   * vault directly with the client's API key.
   */
  sidecar?: string | true;
  /**
   * The sidecar's `SIDECAR_INGEST_TOKEN`, sent as `Authorization: Bearer`: a sidecar that
   * listens on anything but loopback (the compose file's, say) answers 401 without it.
   */
  sidecarToken?: string;
  /** Events per request; default 500. */
  batchSize?: number;
  /** Longest an event waits for its batch to fill; default 200 ms. */
  flushIntervalMs?: number;
  /**
   * Longest `close()` spends delivering what is queued; default 20 s, inside a container's
   * usual 30 s stop. Events still undelivered then go to `onError`, all in one call.
   */
  closeTimeoutMs?: number;
  /** Events held before `report()` refuses more; default 100,000. */
  maxQueued?: number;
  /**
   * How long a batch is retried on network errors, 5xx and 429 before it is given up (to
   * `onError`); default 5 minutes, enough to outlast a vault restart or a rolling deploy.
   */
  retryForMs?: number;
  /** A cap on attempts per batch as well, when set; by default only `retryForMs` limits them. */
  maxAttempts?: number;
  /**
   * Backoff between attempts; default 100 ms doubling up to 5 s, with jitter. An answer's
   * `Retry-After` (429, 503) is waited for when it asks for longer.
   */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Fields applied to every event that does not set them (typically `applicationId`). */
  defaults?: Partial<Pick<ExternalActivityEvent, Defaultable>>;
  /**
   * Events that could not be delivered: refused (a VaultApiError whose message is the
   * vault's or the sidecar's reason) or undeliverable within `retryForMs` (the error's
   * `attempts` is how often the reporter sent the batch). Default: a process warning. It may
   * be async; what it throws or rejects with is ignored and delivery goes on.
   */
  onError?: (error: VaultApiError | VaultNetworkError, events: StampedEvent[]) => void;
}

export interface ReporterStats {
  reported: number;
  delivered: number;
  failed: number;
  queued: number;
}

type Outcome = { rejected: Array<{ event: StampedEvent; error: VaultApiError }> };

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

function retryable(err: unknown): boolean {
  return err instanceof VaultNetworkError || (err instanceof VaultApiError && (RETRYABLE_STATUS.has(err.status) || err.status > 504));
}

/**
 * The error as the reporter saw it, counting its own sends: each goes out once through the
 * transport, whose "1 attempt" would hide a batch tried for minutes.
 */
function withAttempts(err: VaultApiError | VaultNetworkError, attempts: number): VaultApiError | VaultNetworkError {
  if (err instanceof VaultNetworkError) {
    return err.attempts === attempts ? err : new VaultNetworkError({ code: err.code, method: err.method, path: err.path, attempts, cause: err.cause });
  }
  if (err instanceof VaultApiError) (err as { attempts: number }).attempts = attempts;
  return err;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

export class Reporter {
  private queue: StampedEvent[] = [];
  private pump: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private due = false;
  private forced = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  private closeListeners: Array<() => void> = [];
  /** Aborted when close()'s time is up: delivery stops and what is left goes to `abandoned`. */
  private readonly giveUp = new AbortController();
  private abandoned: StampedEvent[] = [];
  private abandonedAttempts = 0;
  private lastFailure: unknown;
  private readonly sidecar: Transport | undefined;
  private readonly batchSize: number;
  private readonly flushIntervalMs: number;
  private readonly maxQueued: number;
  private readonly retryForMs: number;
  private readonly closeTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retry: { retries: number; minDelayMs: number; maxDelayMs: number };
  private readonly onError: NonNullable<ReporterOptions['onError']>;
  private readonly counts = { reported: 0, delivered: 0, failed: 0 };
  private readonly options: Omit<ReporterOptions, 'sidecarToken'>;
  /** Out of `options` and private to the class, so logging the reporter does not show it. */
  readonly #sidecarHeaders: Record<string, string> | undefined;

  constructor(
    private readonly vault: { request<T>(request: Request): Promise<T> },
    transportOptions: TransportOptions,
    { sidecarToken, ...options }: ReporterOptions = {},
  ) {
    this.options = options;
    if (sidecarToken !== undefined) this.#sidecarHeaders = { authorization: `Bearer ${sidecarToken}` };
    this.batchSize = options.batchSize ?? 500;
    this.flushIntervalMs = options.flushIntervalMs ?? 200;
    this.maxQueued = options.maxQueued ?? 100_000;
    this.retryForMs = options.retryForMs ?? 300_000;
    this.closeTimeoutMs = options.closeTimeoutMs ?? 20_000;
    this.maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
    this.retry = { retries: 0, minDelayMs: options.minDelayMs ?? 100, maxDelayMs: options.maxDelayMs ?? 5_000 };
    // Refused here, not met later: a NaN delay would retry with no pause, a NaN limit never hold.
    const { minDelayMs, maxDelayMs } = this.retry;
    const delays = { flushIntervalMs: this.flushIntervalMs, closeTimeoutMs: this.closeTimeoutMs, retryForMs: this.retryForMs, minDelayMs, maxDelayMs };
    for (const [name, delay] of Object.entries(delays)) requireDelay(name, delay);
    for (const [name, count] of Object.entries({ batchSize: this.batchSize, maxQueued: this.maxQueued })) {
      if (!Number.isInteger(count) || count < 1) throw new RangeError(`${name} must be a whole number, 1 or more`);
    }
    if (this.maxAttempts !== Number.POSITIVE_INFINITY && (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1)) {
      throw new RangeError('maxAttempts must be a whole number, 1 or more, or Infinity');
    }
    this.onError =
      options.onError ??
      ((error, events) => process.emitWarning(`${events.length} activity event(s) not delivered: ${error.message}`, 'VaultReporterWarning'));
    if (options.sidecar !== undefined) {
      const url = options.sidecar === true ? DEFAULT_SIDECAR_URL : options.sidecar;
      // The sidecar gets no API key: it holds its own for the vault.
      this.sidecar = new Transport({ ...transportOptions, url, connections: 2, retry: false, userAgent: transportOptions.userAgent });
    }
  }

  get stats(): ReporterStats {
    return { ...this.counts, queued: this.queue.length };
  }

  /**
   * Queues an event and answers it as it will be sent: with `eventId`, `timestamp`, and for a
   * STORE a top-level `dataPointId`: the one given, else `data.dataPointId`, else a new one
   * (keep it to report later READs of that data).
   */
  report(event: ReportableEvent): StampedEvent {
    if (this.closed) throw new VaultClientClosedError({ closed: 'reporter', message: 'The reporter is closed' });
    if (this.queue.length >= this.maxQueued) throw new Error(`The reporter already holds ${this.maxQueued} undelivered events`);
    const stamped = { ...event } as StampedEvent & Record<string, unknown>;
    for (const [field, value] of Object.entries(this.options.defaults ?? {})) if (stamped[field] === undefined) stamped[field] = value;
    stamped.eventId ??= randomUUID();
    const when = stamped.timestamp === undefined ? new Date() : new Date(stamped.timestamp);
    // An unreadable timestamp is sent as given: the vault's refusal reaches onError with its reason.
    if (!Number.isNaN(when.getTime())) stamped.timestamp = when.toISOString();
    // The vault takes a STORE's point id from data.dataPointId when the top level has none:
    // the caller's id must win over a generated one, or the point is registered under an id they never see.
    if (stamped.eventType === 'STORE' && nonEmpty(stamped.dataPointId) === undefined) stamped.dataPointId = nonEmpty(stamped.data?.dataPointId) ?? randomUUID();
    this.queue.push(stamped);
    this.counts.reported++;
    if (this.queue.length >= this.batchSize) void this.kick();
    else this.arm();
    return stamped;
  }

  /** Sends everything queued so far and resolves when it is delivered or given up. */
  async flush(): Promise<void> {
    // Whoever awaits a flush keeps the process alive for it; the waits between retries in
    // the background do not (they are unref'd), as queued events do not.
    const hold = setInterval(() => {}, 60_000);
    try {
      while (this.queue.length > 0 || this.pump) {
        this.forced = true;
        await this.kick();
      }
    } finally {
      clearInterval(hold);
    }
  }

  /**
   * Flushes, then refuses further events. After `closeTimeoutMs` it stops trying and hands
   * whatever is still undelivered to `onError`.
   */
  close(): Promise<void> {
    // Every caller (a shutdown handler, the client's close()) waits for the one delivery:
    // resolving early would let the client close the connections under it.
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const deadline = setTimeout(() => this.giveUp.abort(), this.closeTimeoutMs);
    try {
      await this.flush();
      if (this.abandoned.length > 0) this.failAbandoned();
    } finally {
      clearTimeout(deadline);
      await this.sidecar?.close();
      for (const listener of this.closeListeners) listener();
    }
  }

  private failAbandoned(): void {
    const events = this.abandoned;
    this.abandoned = [];
    const last = this.lastFailure instanceof Error ? `; last failure: ${this.lastFailure.message}` : '';
    const error = new VaultNetworkError({
      code: 'REPORTER_CLOSE_TIMEOUT',
      method: 'POST',
      path: this.sidecar ? '/events' : '/auditlogs/bulk',
      attempts: this.abandonedAttempts,
      cause: this.lastFailure,
      message: `${events.length} activity event(s) not delivered within close()'s ${this.closeTimeoutMs} ms${last}`,
    });
    this.fail(error, events);
  }

  /** @internal */
  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.due = true;
      void this.kick();
    }, this.flushIntervalMs);
    // A pending report must not keep the process alive; close() is what guarantees delivery.
    this.timer.unref();
  }

  private kick(): Promise<void> {
    this.pump ??= (async () => {
      try {
        while (this.queue.length > 0 && (this.forced || this.due || this.queue.length >= this.batchSize)) {
          if (this.giveUp.signal.aborted) {
            this.abandoned.push(...this.queue.splice(0));
            break;
          }
          this.due = false;
          await this.deliver(this.queue.splice(0, this.batchSize));
        }
      } finally {
        this.pump = undefined;
        this.forced = false;
        if (this.queue.length > 0 && !this.closed) this.arm();
      }
    })();
    return this.pump;
  }

  /** Delivers one batch: retries what may succeed later, isolates what was refused. */
  private async deliver(batch: StampedEvent[]): Promise<void> {
    const work: StampedEvent[][] = [batch];
    while (work.length > 0) {
      let pending = work.shift()!;
      const started = Date.now();
      for (let attempt = 1; pending.length > 0; ) {
        if (this.giveUp.signal.aborted) return this.abandon([pending, ...work], attempt - 1);
        try {
          const { rejected } = await this.send(pending);
          for (const { event, error } of rejected) this.fail(error, [event]);
          this.counts.delivered += pending.length - rejected.length;
          this.lastFailure = undefined;
          pending = [];
        } catch (err) {
          if (this.giveUp.signal.aborted) return this.abandon([pending, ...work], attempt);
          this.lastFailure = err instanceof VaultApiError || err instanceof VaultNetworkError ? withAttempts(err, attempt) : err;
          const wait = retryable(err) ? this.retryDelay(err as VaultApiError | VaultNetworkError, attempt, started) : undefined;
          if (wait !== undefined) {
            await sleep(wait, undefined, { signal: this.giveUp.signal, ref: false }).catch(() => {});
            attempt++;
          } else if (err instanceof VaultApiError && err.index !== undefined && err.index >= 0 && err.index < pending.length) {
            // The bulk is atomic: nothing was recorded, so the others are simply sent again.
            this.fail(err, [pending[err.index]]);
            pending = pending.filter((_, i) => i !== err.index);
          } else if (err instanceof VaultApiError && err.status === 413 && pending.length > 1) {
            const half = Math.ceil(pending.length / 2);
            work.unshift(pending.slice(0, half), pending.slice(half));
            pending = [];
          } else {
            this.fail(withAttempts(err as VaultApiError | VaultNetworkError, attempt), pending);
            pending = [];
          }
        }
      }
    }
  }

  /** Sets aside what close() had no time left to deliver. */
  private abandon(batches: StampedEvent[][], attempts: number): void {
    this.abandonedAttempts = Math.max(this.abandonedAttempts, attempts);
    for (const events of batches) this.abandoned.push(...events);
  }

  /** The wait before the next attempt, or undefined when the batch's time (or attempts) is up. */
  private retryDelay(err: VaultApiError | VaultNetworkError, attempt: number, started: number): number | undefined {
    if (attempt >= this.maxAttempts) return undefined;
    const asked = err instanceof VaultApiError && err.retryAfter !== undefined ? err.retryAfter * 1000 : 0;
    const wait = Math.max(asked, backoffDelay(attempt - 1, this.retry));
    return Date.now() + wait - started > this.retryForMs ? undefined : wait;
  }

  private fail(error: VaultApiError | VaultNetworkError, events: StampedEvent[]): void {
    this.counts.failed += events.length;
    try {
      const handled: unknown = this.onError(error, events);
      // An async handler that rejects is contained as a throwing one is, not left to crash the process.
      if (handled instanceof Promise) handled.catch(() => {});
    } catch {
      // A throwing handler must not stall delivery of everything after it.
    }
  }

  private async send(events: StampedEvent[]): Promise<Outcome> {
    if (!this.sidecar) {
      // The reporter's own retries count the attempts and keep to retryForMs: none underneath.
      await this.vault.request({ method: 'POST', path: '/auditlogs/bulk', body: events, idempotent: false, retry: false, signal: this.giveUp.signal });
      return { rejected: [] };
    }
    type Answer = { accepted?: Array<{ index: number }>; rejected?: Array<{ index: number; message: string }>; message?: string };
    let answer: Answer;
    try {
      answer = (await this.sidecar.send<Answer>({ method: 'POST', path: '/events', body: events, headers: this.#sidecarHeaders, idempotent: false, signal: this.giveUp.signal })).body;
    } catch (err) {
      // 400 with a rejected list: the sidecar took none of them, each for its own reason.
      if (!(err instanceof VaultApiError) || err.status !== 400) throw err;
      answer = err.body as Answer;
      if (!Array.isArray(answer?.rejected) || answer.rejected.length === 0) throw err;
    }
    const rejected = (answer.rejected ?? [])
      .filter((r) => events[r.index] !== undefined)
      .map((r) => ({
        event: events[r.index],
        error: new VaultApiError({ status: 400, message: r.message, method: 'POST', path: '/events', body: r, index: r.index }),
      }));
    return { rejected };
  }
}
