/**
 * What every answer carries and what every caller is held to: security headers, its request
 * id, no caching of personal data, per-application rate limits, and a brake on key guessing.
 */
import helmet from 'helmet';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { VaultError } from '../errors.js';
import type { VaultConfig } from '../config.js';

export async function installProtection(app: FastifyInstance, config: VaultConfig): Promise<void> {
  // On send, not on request: answers given by an earlier hook (a 401 from authentication)
  // carry them too. A route's own value for one of them (the console's) is kept.
  const headers = Object.entries({ ...securityHeaders(), 'cache-control': 'no-store' });
  // Hooks on every answer take a callback: an async one costs a promise and a turn of the
  // microtask queue per request.
  app.addHook('onSend', (request, reply, payload, done) => {
    for (const [name, value] of headers) if (!reply.hasHeader(name)) reply.header(name, value);
    // The id of the answer's log lines, refusals' included: what an operator greps the log for
    // when a client reports a failure.
    reply.header('x-request-id', request.id);
    done(null, payload);
  });

  if (config.rateLimit.max > 0) {
    await app.register(rateLimit, {
      global: true,
      // After authentication, so the limit is per application rather than per address.
      hook: 'preHandler',
      max: config.rateLimit.max,
      timeWindow: config.rateLimit.windowMs,
      keyGenerator: (request) => (request.caller ? `app:${request.caller.applicationId}` : `ip:${request.ip}`),
      allowList: (request) => Boolean(request.routeOptions.config.public),
      errorResponseBuilder: (_request, context) =>
        new VaultError(429, `Rate limit exceeded, retry in ${Math.ceil(context.ttl / 1000)} seconds`),
    });
  }
}

/**
 * Helmet's headers, taken once. With no CSP they do not depend on the request, and setting
 * them through Fastify's reply (written with the status line) costs a fraction of running
 * Helmet's middleware on every response.
 */
export function securityHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string) => void (headers[name.toLowerCase()] = value),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  // The API answers JSON only; the CSP would only get in the way of the /docs page, and the
  // console sets its own.
  helmet({ contentSecurityPolicy: false })({} as never, response as never, (err?: unknown) => {
    if (err) throw err;
  });
  return headers;
}

/**
 * Counts failed authentications per address in a fixed window. In memory and per process:
 * it slows a guesser down, and the keys' 256 bits of entropy do the rest.
 */
export class AuthFailureLimiter {
  private windows = new Map<string, { count: number; resetAt: number }>();
  private static readonly MAX_TRACKED = 100_000;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Seconds to wait when the address is over its limit, else 0. */
  retryAfter(address: string, now = Date.now()): number {
    const entry = this.windows.get(address);
    if (!entry || entry.resetAt <= now || entry.count < this.limit) return 0;
    return Math.ceil((entry.resetAt - now) / 1000);
  }

  recordFailure(address: string, now = Date.now()): void {
    if (this.limit <= 0) return;
    const entry = this.windows.get(address);
    if (entry && entry.resetAt > now) {
      entry.count += 1;
      return;
    }
    if (this.windows.size >= AuthFailureLimiter.MAX_TRACKED) this.evictExpired(now);
    this.windows.set(address, { count: 1, resetAt: now + this.windowMs });
  }

  private evictExpired(now: number): void {
    for (const [address, entry] of this.windows) if (entry.resetAt <= now) this.windows.delete(address);
    // Still full of live entries: forget the oldest rather than grow without bound.
    if (this.windows.size >= AuthFailureLimiter.MAX_TRACKED) this.windows.delete(this.windows.keys().next().value!);
  }
}
