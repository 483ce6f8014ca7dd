import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { Pool, errors as undiciErrors } from 'undici';
import type { StampedEvent } from '../ingest/event.js';
import { stampEvent } from '../ingest/validate.js';
import type { SidecarMetrics } from '../metrics.js';
import { backoffDelay, sleep } from '../delivery/backoff.js';
import type { EventProducer } from '../queue/producer.js';
import { Tap, charsetOf, decode, isJson, parseJson, readUpTo, relay, resume } from './bodies.js';
import { buildEvents, defaultMaxEvents, type BuiltEvents } from './events.js';
import { forwardHeaders, hasBody, headerOf, hostLines, originForm, reasonPhrase, responseHeaders } from './headers.js';
import { climbsAboveRoot } from './route-match.js';
import type { CompiledRoutes, RouteMatch } from './routes-file.js';

/** A request the proxy will not send on; its connection is closed, so an unread body is no matter. */
function refuse(res: ServerResponse, message: string): void {
  const body = JSON.stringify({ statusCode: 400, error: 'Bad Request', message });
  res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
}

export interface ReverseProxyOptions {
  upstream: string;
  routes: CompiledRoutes;
  /** Most bytes of one body held in memory for JSON pointer extraction. */
  bodyLimit: number;
  /** Most events one request yields; the rest are counted as lost. */
  maxEvents?: number;
  /** How long the upstream may take for its headers, and then between body chunks (504 before the headers). */
  upstreamTimeoutMs?: number;
  /** How long an idle client connection is kept open. */
  keepAliveMs?: number;
  producer: EventProducer;
  metrics: SidecarMetrics;
  log: Logger;
  /** How long an event from proxied traffic waits for Redis before it is counted as lost. */
  enqueueRetryMs?: number;
  /** How long events of proxied requests wait to be enqueued together. */
  lingerMs?: number;
}

const maxLingerEvents = 1000;
/** RFC 9110 §9.2.2: methods whose request may be sent twice. */
const idempotentMethods = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/**
 * Node's 16 KiB cuts off services that set big cookies (a 502 for their answers) and clients
 * that send them (a 431).
 */
const maxHeaderSize = 64 * 1024;
/** Node's default, kept: room for big uploads, yet a client trickling a body cannot hold a connection for ever (408). */
const requestTimeoutMs = 300_000;

/**
 * Sits in front of an upstream HTTP service. Traffic goes through unchanged; requests matching
 * a route also yield audit events once the upstream answered 2xx. Bodies are streamed; a body
 * is only held in memory (up to `bodyLimit`) when a matched route reads a JSON pointer in it,
 * and a response body is then copied aside while it streams to the client, never delayed, and
 * read to its end even if the client hangs up.
 *
 * Events are handed to the producer once the upstream answered 2xx, before the client sees
 * the end of the response, and never delay or fail the client's traffic. The producer writes
 * them in the order it got them, so a client's next request cannot overtake them. If Redis is
 * away longer than enqueueRetryMs, they are dropped and counted in
 * sidecar_proxy_events_lost_total.
 */
export class ReverseProxy {
  private readonly server: Server;
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly closing = new AbortController();
  private readonly enqueueRetryMs: number;
  private readonly lingerMs: number;
  private buffered: StampedEvent[] = [];
  private lingerTimer: NodeJS.Timeout | undefined;
  /** Lingered events waiting for Redis, oldest first, each with the time it is given up. */
  private waiting: { events: StampedEvent[]; giveUpAt: number }[] = [];
  private draining: Promise<void> | undefined;

  constructor(private readonly options: ReverseProxyOptions) {
    const upstream = new URL(options.upstream);
    this.basePath = upstream.pathname.replace(/\/+$/, '');
    const timeout = options.upstreamTimeoutMs ?? 300_000;
    this.pool = new Pool(upstream.origin, { keepAliveTimeout: 30_000, headersTimeout: timeout, bodyTimeout: timeout, maxHeaderSize });
    this.enqueueRetryMs = options.enqueueRetryMs ?? 60_000;
    this.lingerMs = options.lingerMs ?? 5;
    const keepAliveMs = options.keepAliveMs ?? 65_000;
    // Headers timeout above the keep-alive one, as load balancers' guides advise.
    const headersTimeout = keepAliveMs + 1000;
    this.server = createServer({ maxHeaderSize, headersTimeout, requestTimeout: Math.max(requestTimeoutMs, headersTimeout) }, (req, res) => {
      this.handle(req, res).catch((err) => {
        // A client gone mid-request (its body cut off) is the client's doing, not a fault to page anyone for.
        if (req.destroyed && !req.complete) {
          options.log.debug({ err: (err as Error).message }, 'client went away before its request was forwarded');
          return;
        }
        options.log.error({ err: (err as Error).message }, 'proxy request failed');
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ statusCode: 500, error: 'Internal Server Error', message: 'proxy error' }));
        } else res.destroy();
      });
    });
    this.server.keepAliveTimeout = keepAliveMs;
  }

  async listen(host: string, port: number): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // RFC 9112 §3.2: a 400. Node takes such a request (and keeps the first), undici refuses to
    // send it, and the client would get a 502 that blames the service.
    if (hostLines(req.rawHeaders) > 1) return refuse(res, 'Request has more than one Host header');
    const method = req.method ?? 'GET';
    const target = originForm(req.url ?? '/');
    const q = target.indexOf('?');
    const pathname = q >= 0 ? target.slice(0, q) : target;
    if (climbsAboveRoot(pathname)) return refuse(res, 'Request path climbs above the root');
    const match = this.options.routes.match(method, pathname);
    this.options.metrics.proxyRequests.inc({ matched: match ? 'true' : 'false' });

    let body: Readable | Buffer | null = hasBody(req) ? req : null;
    let requestBody: unknown;
    let requestBodyMissing = false;
    let requestCharsetUnknown = false;
    if (match?.route.needsRequestBody && body !== null) {
      const declared = Number(req.headers['content-length'] ?? NaN);
      const json = isJson(req.headers['content-type']);
      // Read in any charset but its own, ids and values would be reported other than they were sent.
      const charset = json ? charsetOf(req.headers['content-type']) : undefined;
      requestCharsetUnknown = json && charset === undefined;
      if (charset !== undefined && !(declared > this.options.bodyLimit)) {
        const read = await readUpTo(req, this.options.bodyLimit);
        if (read.complete) {
          const buffer = Buffer.concat(read.chunks);
          body = buffer;
          // Sent on as it came; read as the service reads it (Express's body-parser inflates).
          requestBody = parseJson(decode(buffer, req.headers['content-encoding'], this.options.bodyLimit), charset);
        } else {
          body = Readable.from(resume(read.chunks, req));
        }
      }
      requestBodyMissing = requestBody === undefined;
    }

    // A client gone before the answer frees the service from a request no route audits, as a
    // hang-up without the proxy would; a routed one runs on, since its answer may be audited.
    // (An emitter rather than an AbortController, which costs more and is rarely needed.)
    const abandon = match ? undefined : new EventEmitter();
    if (abandon) res.once('close', () => abandon.emit('abort'));
    if (body === req) body = Readable.from(resume([], req));
    let upstream: Awaited<ReturnType<Pool['request']>>;
    try {
      upstream = await this.forward(method, target, req, body, abandon);
    } catch (err) {
      if (res.destroyed) return;
      const timedOut = err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.ConnectTimeoutError;
      this.options.log.warn({ code: (err as { code?: string }).code }, 'upstream request failed');
      req.resume();
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(timedOut ? 504 : 502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ statusCode: timedOut ? 504 : 502, error: timedOut ? 'Gateway Timeout' : 'Bad Gateway', message: 'upstream unavailable' }));
      }
      return;
    }

    const succeeded = upstream.statusCode >= 200 && upstream.statusCode < 300;
    if (succeeded && match?.undecodable) {
      const { route } = match;
      // A list route's answer is not read then: how many items it showed nobody knows, so the request counts once.
      this.options.metrics.proxyEventsLost.inc({ reason: 'undecodable-path' }, route.items ? 1 : route.attributes.length);
      const count = route.items ? { eventsPerItem: route.attributes.length } : { eventCount: route.attributes.length };
      this.options.log.warn({ route: route.index, ...count }, 'events lost: the path does not decode');
    }
    const reporting = match !== undefined && succeeded && !match.undecodable;
    // The answer to a HEAD, a 204 or a 205 has no body by definition: it shows nothing, so
    // attributes read from it have no event due, and none is lost.
    const bodiless = method === 'HEAD' || upstream.statusCode === 204 || upstream.statusCode === 205;
    const tap = reporting && match.route.needsResponseBody && !bodiless ? new Tap(this.options.bodyLimit) : undefined;
    const query = () => new URLSearchParams(q >= 0 ? target.slice(q + 1) : '');
    if (reporting && requestBodyMissing) this.bodyUnavailable(match, 'request', requestCharsetUnknown ? req.headers['content-type'] : undefined);
    // Events that need nothing from the response body are handed over before it streams.
    if (reporting && !tap) this.emit(match, { params: match.params, query: query(), headers: req.headers, requestBody });

    const headers = upstream.headers as unknown as string[];
    res.writeHead(upstream.statusCode, reasonPhrase(upstream.statusText), responseHeaders(headers));
    if (!tap || !match) {
      await relay(upstream.body, res, undefined, true);
      return;
    }
    const complete = await relay(upstream.body, res, tap, false);
    let responseBody: unknown;
    let unknownCharset: string | undefined;
    const contentType = headerOf(headers, 'content-type');
    if (complete && !tap.overflow && isJson(contentType)) {
      const charset = charsetOf(contentType);
      if (charset === undefined) unknownCharset = contentType;
      else responseBody = parseJson(decode(tap.buffer(), headerOf(headers, 'content-encoding'), this.options.bodyLimit), charset);
    }
    if (responseBody === undefined) this.bodyUnavailable(match, 'response', unknownCharset);
    this.emit(match, { params: match.params, query: query(), headers: req.headers, requestBody, responseBody });
    // Only now may the client see the end of the response: its next request's events are
    // then handed to the producer after these, and the producer keeps that order into Redis.
    if (complete && !res.destroyed) res.end();
  }

  private async forward(
    method: string, target: string, req: IncomingMessage, body: Readable | Buffer | null, signal: EventEmitter | undefined,
  ): Promise<Awaited<ReturnType<Pool['request']>>> {
    // Raw headers: the answer goes back with its header names spelt as the upstream wrote them.
    const send = () => this.pool.request({ method: method as 'GET', path: this.basePath + target, headers: forwardHeaders(req), body, responseHeaders: 'raw', signal });
    try {
      return await send();
    } catch (err) {
      // A kept-alive connection the upstream closed just as the request went out on it (a
      // server that does not announce its idle timeout): a client talking to it directly
      // would send the request again on a new connection, as browsers do, so the proxy does,
      // once. Only a request that may be sent twice, and whose body is at hand to send again.
      if (!(err instanceof undiciErrors.SocketError) || !idempotentMethods.has(method) || body instanceof Readable) throw err;
      return send();
    }
  }

  /**
   * Counted once per request, as the README says; logged with what an operator can act on.
   * `contentType` when the body was at hand but labelled with a charset Node cannot decode.
   */
  private bodyUnavailable(match: RouteMatch, body: 'request' | 'response', contentType?: string): void {
    const reason = `${body}-body-unavailable` as const;
    this.options.metrics.proxyEventsLost.inc({ reason });
    const { route } = match;
    // `eventCount`, not `events`: the log redacts a field of that name, meant for whole events.
    // A list's length is in the body that is not at hand: what is known is the count per item.
    const count = route.items?.body === body
      ? { eventsPerItem: route.attributes.length }
      : { eventCount: route.subjectId?.kind === body ? route.attributes.length : route.attributes.filter((a) => a.source?.kind === body).length };
    if (contentType !== undefined) {
      // The header is the upstream's or the client's: bounded, since it lands in the log.
      this.options.log.warn({ route: route.index, reason, ...count, contentType: contentType.slice(0, 200) }, `events lost: the ${body} body's charset cannot be decoded`);
      return;
    }
    this.options.log.warn({ route: route.index, reason, ...count }, `events lost: the ${body} body is not at hand (over the limit, not JSON, or cut short)`);
  }

  private emit(match: RouteMatch, ctx: Parameters<typeof buildEvents>[1]): void {
    const built = buildEvents(match.route, ctx, this.options.maxEvents ?? defaultMaxEvents);
    if (built.skipped.length > 0) {
      this.options.log.debug({ route: match.route.index, skipped: built.skipped }, 'attributes without events');
    }
    for (const lost of built.lost) this.options.metrics.proxyEventsLost.inc({ reason: lost.reason }, lost.count ?? 1);
    if (built.lost.length > 0) this.options.log.warn({ route: match.route.index, lost: built.lost }, 'events lost: they could not be built');
    this.listLost(match, built);
    if (built.events.length === 0) return;
    const now = new Date().toISOString();
    for (const e of built.events) this.buffered.push(stampEvent(e, now));
    if (this.buffered.length >= maxLingerEvents) this.flush();
    else this.lingerTimer ??= setTimeout(() => this.flush(), this.lingerMs);
  }

  /** Losses only list routes and the bound per request have. */
  private listLost(match: RouteMatch, built: BuiltEvents): void {
    const { route } = match;
    if (built.overLimit > 0) {
      const reason = 'too-many-events';
      this.options.metrics.proxyEventsLost.inc({ reason }, built.overLimit);
      this.options.log.warn(
        { route: route.index, reason, eventCount: built.overLimit, limit: this.options.maxEvents ?? defaultMaxEvents },
        'events lost: the request shows more than SIDECAR_PROXY_MAX_EVENTS',
      );
    }
    if (built.notAList !== undefined && route.items) {
      // Once per request, as a body not at hand: how many items it hid nobody can tell.
      const reason = 'items-not-a-list';
      this.options.metrics.proxyEventsLost.inc({ reason });
      this.options.log.warn(
        { route: route.index, reason, items: `${route.items.body} ${JSON.stringify(route.items.pointer)}`, found: built.notAList, eventsPerItem: route.attributes.length },
        `events lost: the ${route.items.body} body holds no array where the route's items are`,
      );
    }
  }

  /**
   * Events of proxied requests linger a few milliseconds and go to Redis together: nobody
   * waits on them, and one job per request would cost Redis and the worker more than the
   * proxying itself. Order is kept: this buffer and the waiting line are both first in, first
   * out, and one enqueue at a time leaves the line, so events held back while Redis is away
   * cannot be overtaken by later ones when it returns.
   */
  private flush(): void {
    clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
    if (this.buffered.length === 0) return;
    this.waiting.push({ events: this.buffered, giveUpAt: Date.now() + this.enqueueRetryMs });
    this.buffered = [];
    this.draining ??= this.drain();
  }

  /** Enqueues the waiting line's head (what piled up behind it joins it) until the line is empty. */
  private async drain(): Promise<void> {
    try {
      await this.drainLine();
    } finally {
      // In the same tick as the line was found empty: a flush after it starts a new drain.
      this.draining = undefined;
    }
  }

  private async drainLine(): Promise<void> {
    for (let attempt = 1; this.waiting.length > 0; ) {
      const head = this.waiting.slice(0, this.takeCount());
      const events = head.length === 1 ? head[0].events : head.flatMap((w) => w.events);
      try {
        await this.options.producer.enqueue(events);
        this.waiting.splice(0, head.length);
        this.options.metrics.eventsAccepted.inc({ source: 'proxy' }, events.length);
        attempt = 1;
        continue;
      } catch {
        // Nothing behind it was tried; if Redis did take it after all, the resend has the same eventIds.
      }
      const now = Date.now();
      let expired = 0;
      while (expired < this.waiting.length && (this.closing.signal.aborted || this.waiting[expired].giveUpAt <= now)) expired++;
      if (expired > 0) this.drop(this.waiting.splice(0, expired));
      if (this.waiting.length === 0) return;
      await sleep(backoffDelay(attempt++, 100, 2000), this.closing.signal).catch(() => {});
    }
  }

  /** How many of the waiting line's entries go to Redis together: at least one, then up to maxLingerEvents. */
  private takeCount(): number {
    let n = 1;
    let count = this.waiting[0].events.length;
    while (n < this.waiting.length && count + this.waiting[n].events.length <= maxLingerEvents) count += this.waiting[n++].events.length;
    return n;
  }

  private drop(entries: { events: StampedEvent[] }[]): void {
    const eventCount = entries.reduce((n, e) => n + e.events.length, 0);
    this.options.metrics.proxyEventsLost.inc({ reason: 'queue-unavailable' }, eventCount);
    this.options.log.error({ eventCount }, 'dropping events from proxied traffic: Redis unavailable');
  }

  /**
   * Stops accepting and lets requests in flight finish and their events reach Redis, until
   * `deadline` (epoch ms). Whatever is still open then is cut: a hanging upstream cannot hold
   * the sidecar up. Resolves to whether everything finished in time.
   */
  async close(deadline: number): Promise<boolean> {
    const left = () => Math.max(0, deadline - Date.now());
    // Requests get all but the last stretch, which is for their events to reach Redis.
    const requestsUntil = Date.now() + Math.max(0, left() - Math.min(1000, left() / 4));
    const closed = new Promise<boolean>((resolve) => this.server.close(() => resolve(true)));
    this.server.closeIdleConnections();
    const finished = await Promise.race([closed, sleep(Math.max(0, requestsUntil - Date.now())).then(() => false)]);
    if (!finished) this.server.closeAllConnections();
    this.flush();
    const flushed = await Promise.race([(this.draining ?? Promise.resolve()).then(() => true), sleep(left()).then(() => false)]);
    this.closing.abort();
    // destroy, not close: close would wait for upstream requests that may never answer.
    await this.pool.destroy().catch(() => {});
    return finished && flushed;
  }
}
