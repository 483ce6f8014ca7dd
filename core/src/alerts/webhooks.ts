/**
 * Delivery of alerts to the operator's webhooks: one JSON POST per alert and URL, retried
 * with exponential backoff while the receiver is down or failing. Delivery is at least once
 * (a receiver dedupes on the alert's `id`) and in memory: alerts are recorded in the
 * database before delivery starts, so one whose retries a restart cut short is still in
 * `GET /alerts`.
 */
import { createHmac } from 'node:crypto';
import { Agent, request } from 'undici';
import type { Logger } from 'pino';

export interface WebhookOptions {
  urls: string[];
  /** Attempts per alert and URL, the first included. */
  attempts: number;
  /** Delay before the first retry; each further retry waits twice as long. */
  baseDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
  /** When set, each delivery carries `X-Vault-Signature: sha256=<HMAC of the body>`. */
  secret?: string;
}

export const DEFAULT_WEBHOOK_OPTIONS: Omit<WebhookOptions, 'urls'> = {
  // The first try and 8 retries: the last waits 0.5 s × 2⁷, which the 60 s cap shortens.
  attempts: 9,
  baseDelayMs: 500,
  maxDelayMs: 60_000,
  timeoutMs: 5_000,
};

/** Webhook URLs may carry credentials; logs name the host only. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'invalid-url';
  }
}

/** A stray `%` in a user or password is taken as written. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Where to POST, and the basic authentication the URL's user and password ask for: the HTTP
 * client ignores credentials in a URL, so a receiver behind basic authentication answered
 * every alert 401, which is final.
 */
function target(url: string): { url: string; authorization?: string } {
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return { url };
  const credentials = `${decoded(parsed.username)}:${decoded(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.toString(), authorization: `Basic ${Buffer.from(credentials).toString('base64')}` };
}

/** 408, 429 and 5xx are worth another try; any other answer will not change. */
function retryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Connections one receiver may hold at once; further deliveries queue for one. Unbounded, a
 * receiver that accepted connections and never answered got a socket per alert in flight,
 * and an alert storm ran the vault out of file descriptors, failing every request.
 */
export const MAX_CONNECTIONS_PER_RECEIVER = 8;

export class WebhookDelivery {
  private options: WebhookOptions;
  private readonly agent = new Agent({ connections: MAX_CONNECTIONS_PER_RECEIVER, keepAliveTimeout: 4_000, connect: { timeout: 5_000 } });
  private readonly timers = new Set<NodeJS.Timeout>();
  private pending = 0;
  private idleWaiters: Array<() => void> = [];
  private closed = false;

  constructor(
    options: WebhookOptions,
    private readonly logger: Logger,
  ) {
    this.options = options;
  }

  get urls(): readonly string[] {
    return this.options.urls;
  }

  /** Replaces the settings for deliveries started from now on (tests, reconfiguration). */
  configure(options: Partial<WebhookOptions>): void {
    this.options = { ...this.options, ...options };
  }

  /** Starts delivering; never throws and never waits for the receiver. */
  send(id: string, payload: object): void {
    if (this.closed) return;
    const body = JSON.stringify(payload);
    for (const url of this.options.urls) {
      this.pending++;
      void this.attempt(url, id, body, 1, this.options);
    }
  }

  private async attempt(url: string, id: string, body: string, attempt: number, options: WebhookOptions): Promise<void> {
    let outcome: 'delivered' | 'retry' | 'rejected';
    let status: number | undefined;
    try {
      const { url: endpoint, authorization } = target(url);
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-vault-alert-id': id };
      if (authorization) headers.authorization = authorization;
      if (options.secret) headers['x-vault-signature'] = `sha256=${createHmac('sha256', options.secret).update(body).digest('hex')}`;
      const res = await request(endpoint, {
        method: 'POST',
        body,
        headers,
        dispatcher: this.agent,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
      status = res.statusCode;
      await res.body.dump();
      outcome = status >= 200 && status < 300 ? 'delivered' : retryable(status) ? 'retry' : 'rejected';
    } catch {
      outcome = 'retry';
    }
    if (outcome === 'delivered') {
      this.logger.debug({ alertId: id, webhook: hostOf(url), attempt }, 'alert delivered');
      return this.settle();
    }
    if (outcome === 'rejected' || attempt >= options.attempts || this.closed) {
      this.logger.warn({ alertId: id, webhook: hostOf(url), attempt, status }, 'alert delivery failed; giving up');
      return this.settle();
    }
    const delay = Math.min(options.baseDelayMs * 2 ** (attempt - 1), options.maxDelayMs);
    this.logger.info({ alertId: id, webhook: hostOf(url), attempt, status, retryInMs: delay }, 'alert delivery failed; will retry');
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.attempt(url, id, body, attempt + 1, options);
    }, delay);
    timer.unref();
    this.timers.add(timer);
  }

  private settle(): void {
    // close() zeroes the count while requests may still be in flight.
    if (this.pending > 0) this.pending--;
    if (this.pending === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Resolves once every started delivery has succeeded or given up. */
  async idle(): Promise<void> {
    if (this.pending === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Drops pending retries (they are logged as given up) and closes the connections, letting
   * the deliveries under way finish for up to one timeout: those still queued for a receiver
   * that does not answer would otherwise hold the shutdown a timeout per few alerts.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    if (this.timers.size > 0) this.logger.warn({ dropped: this.timers.size }, 'alert deliveries still retrying were dropped at shutdown');
    this.timers.clear();
    this.pending = 0;
    for (const w of this.idleWaiters.splice(0)) w();
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      this.agent.close().then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.options.timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!closed) await this.agent.destroy();
  }
}
