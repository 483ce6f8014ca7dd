import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { StampedEvent } from '../ingest/event.js';

export interface FakeVaultOptions {
  apiKey?: string;
  /** Returns a reason when the vault must refuse this event (a "poison" event). */
  poison?: (event: StampedEvent) => string | undefined;
}

export interface Summary {
  eventId: string;
  sequence: number;
  recordedAt: string;
}

/**
 * A stand-in for the vault's POST /auditlogs/bulk that keeps its contract: all-or-nothing
 * bulks, 4xx `{statusCode, error, message, index}` naming the first failing event, and
 * eventId deduplication (a known eventId is answered as before and not recorded again).
 * It can be made to fail (503), to go away entirely (every connection cut) and to come back on
 * the same port, and to record a bulk but answer late, so a sidecar can be killed after the
 * vault recorded a batch and before the sidecar heard about it.
 */
export class FakeVault {
  /** The key it accepts; a test may change it, as an operator fixing a key would. */
  apiKey: string;
  poison: ((event: StampedEvent) => string | undefined) | undefined;
  /** 'up' answers normally, 'failing' answers 503 without recording anything. */
  mode: 'up' | 'failing' = 'up';
  /** Delay between recording a bulk and answering it. */
  answerDelayMs = 0;
  /** Recorded events, in recording order, each once. */
  readonly records: StampedEvent[] = [];
  private readonly summaries = new Map<string, Summary>();
  /** How many times each eventId was received in an accepted bulk (duplicates included). */
  readonly received = new Map<string, number>();
  requests = 0;
  readonly bulkSizes: number[] = [];
  inFlight = 0;
  private server: Server | undefined;
  /** Stopped: connections are cut as they come, on a port kept for the return. */
  private away = false;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(options: FakeVaultOptions = {}) {
    this.apiKey = options.apiKey ?? 'test-api-key';
    this.poison = options.poison;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get duplicateDeliveries(): number {
    let n = 0;
    for (const count of this.received.values()) n += count - 1;
    return n;
  }

  recordedIds(): string[] {
    return this.records.map((e) => e.eventId);
  }

  async start(port = this.port): Promise<string> {
    if (this.server) {
      this.away = false;
      this.server.ref();
      return this.url;
    }
    const server = createServer((req, res) => void this.handle(req, res));
    server.on('connection', (socket) => {
      if (this.away) {
        socket.destroy();
        return;
      }
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this.url;
  }

  /**
   * Goes away: open connections are cut, and new ones as they come. The port stays bound (and
   * no longer keeps the process alive): closed, it could be taken by another process's
   * connection meanwhile, and the vault could not come back on it.
   */
  async stop(): Promise<void> {
    if (!this.server || this.away) return;
    this.away = true;
    this.server.unref();
    for (const socket of this.sockets) socket.destroy();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/auditlogs/bulk') {
      return send(404, { statusCode: 404, error: 'Not Found', message: `${req.method} ${req.url} not found` });
    }
    this.requests++;
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return send(401, { statusCode: 401, error: 'Unauthorized', message: 'bad API key' });
    }
    if (this.mode === 'failing') {
      return send(503, { statusCode: 503, error: 'Service Unavailable', message: 'vault is failing' });
    }
    let events: unknown;
    try {
      events = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(400, { statusCode: 400, error: 'Bad Request', message: 'body is not JSON' });
    }
    if (!Array.isArray(events)) return send(400, { statusCode: 400, error: 'Bad Request', message: 'body must be an array' });

    // All-or-nothing: find the first bad event before recording anything.
    for (let index = 0; index < events.length; index++) {
      const reason = this.refuse(events[index]);
      if (reason) return send(400, { statusCode: 400, error: 'Bad Request', message: `event ${index}: ${reason}`, index });
    }
    this.bulkSizes.push(events.length);
    const answer = (events as StampedEvent[]).map((event) => {
      this.received.set(event.eventId, (this.received.get(event.eventId) ?? 0) + 1);
      const known = this.summaries.get(event.eventId);
      if (known) return known;
      this.records.push(event);
      const summary: Summary = { eventId: event.eventId, sequence: this.records.length, recordedAt: new Date().toISOString() };
      this.summaries.set(event.eventId, summary);
      return summary;
    });
    if (this.answerDelayMs > 0) {
      this.inFlight++;
      await new Promise((resolve) => setTimeout(resolve, this.answerDelayMs));
      this.inFlight--;
    }
    send(200, answer);
  }

  private refuse(event: unknown): string | undefined {
    if (typeof event !== 'object' || event === null) return 'must be an object';
    const e = event as Partial<StampedEvent>;
    if (typeof e.eventId !== 'string' || e.eventId === '') return 'eventId is required';
    if (typeof e.applicationId !== 'string') return 'applicationId is required';
    if (!['READ', 'STORE', 'DELETE', 'UPDATE'].includes(e.eventType as string)) return 'eventType is invalid';
    return this.poison?.(e as StampedEvent);
  }
}
