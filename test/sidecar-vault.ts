import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { freePort, repoRoot } from '../proxy/src/testing/helpers.js';

/** Helpers for the sidecar's end-to-end tests: the real vault as a child process. */

export interface ActivityRecord {
  sequence: number;
  eventId: string;
  eventType: string;
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  applicationId: string;
  applicationUser?: string;
  /** The id of the application whose key delivered it. */
  recordedBy: string;
}

/** The port was taken by another process (another test's server) before the vault listened on it. */
class PortTaken extends Error {}

export class RealVault {
  private child: ChildProcess | undefined;
  private output = '';
  /** Chosen by the first start; a restart keeps it, as the sidecars pointed at the vault expect. */
  port = 0;

  constructor(
    readonly dataDir: string,
    readonly apiKey: string,
    /** More settings, e.g. `VAULT_DB` for a PostgreSQL database. */
    readonly env: Record<string, string> = {},
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * `node --import tsx core/src/main.ts`, as documented for the vault. Test files run side by
   * side, and the port freePort() released may be taken by another test's server before the
   * vault listens on it: the first start then takes another one. A restart must have its port
   * back, and fails if another process took it meanwhile (never talking to that one instead).
   */
  async start(): Promise<void> {
    if (this.port !== 0) return this.startOn(this.port);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        await this.startOn(port);
        this.port = port;
        return;
      } catch (err) {
        if (!(err instanceof PortTaken) || attempt >= 5) throw err;
      }
    }
  }

  private async startOn(port: number): Promise<void> {
    const url = `http://127.0.0.1:${port}`;
    this.output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'core/src/main.ts'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? '',
        VAULT_PORT: String(port),
        VAULT_HOST: '127.0.0.1',
        VAULT_DATA_DIR: this.dataDir,
        VAULT_ADMIN_API_KEY: this.apiKey,
        VAULT_LOG_LEVEL: 'warn',
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout!.on('data', (chunk) => (this.output += chunk));
    child.stderr!.on('data', (chunk) => (this.output += chunk));
    const deadline = Date.now() + 60_000;
    try {
      for (;;) {
        if (child.exitCode !== null) {
          if (this.output.includes('EADDRINUSE')) throw new PortTaken(`port ${port} was taken`);
          throw new Error(`vault exited with ${child.exitCode}: ${this.output.slice(-2000)}`);
        }
        // Its admin key proves the vault answering is this one: another's answers 401.
        const res = await fetch(`${url}/entitytypes`, { headers: { authorization: `Bearer ${this.apiKey}` } }).catch(() => undefined);
        await res?.arrayBuffer();
        if (res?.status === 200) return;
        if (res?.status === 401) throw new PortTaken(`${url} is another process's vault`);
        if (Date.now() > deadline) throw new Error(`the vault did not answer within 60 s: ${this.output.slice(-2000)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } catch (err) {
      await this.stop('SIGKILL');
      throw err;
    }
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.child = undefined;
    const exited = once(child, 'exit');
    child.kill(signal);
    await exited;
  }

  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await request(`${this.url}${path}`, {
      method: method as 'GET',
      headers: { authorization: `Bearer ${this.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
  }

  async defineAttribute(key: string): Promise<void> {
    const res = await this.call('POST', '/attributes', { key, schema: 'string' });
    if (res.status !== 200 && res.status !== 201) throw new Error(`cannot define ${key}: ${JSON.stringify(res.body)}`);
  }

  /** Every activity record of one application, oldest first. */
  async activity(applicationId: string): Promise<ActivityRecord[]> {
    const all: ActivityRecord[] = [];
    for (let page = 0; ; page++) {
      const res = await this.call('GET', `/activity?applicationId=${encodeURIComponent(applicationId)}&count=1000&page=${page}`);
      if (res.status !== 200) throw new Error(`GET /activity answered ${res.status}: ${JSON.stringify(res.body)}`);
      all.push(...res.body.data);
      if (res.body.data.length < 1000) return all;
    }
  }
}

/**
 * Between the sidecar and the vault: forwards bulks to the real vault and, while `holdMs` is
 * set, holds the vault's answer back. Killing the sidecar then leaves a batch the vault has
 * recorded but the sidecar never heard about.
 */
export class AnswerDelay {
  private server: Server | undefined;
  holdMs = 0;
  inFlight = 0;
  forwarded = 0;
  /** How many times each eventId was sent to the vault. */
  readonly sent = new Map<string, number>();

  constructor(private readonly target: string) {}

  async start(): Promise<string> {
    this.server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      try {
        for (const event of JSON.parse(Buffer.concat(chunks).toString()) as { eventId: string }[]) {
          this.sent.set(event.eventId, (this.sent.get(event.eventId) ?? 0) + 1);
        }
        const answer = await request(`${this.target}${req.url}`, {
          method: req.method as 'POST',
          headers: { 'content-type': req.headers['content-type'] ?? 'application/json', authorization: req.headers.authorization ?? '' },
          body: Buffer.concat(chunks),
        });
        const body = await answer.body.text();
        this.forwarded++;
        if (this.holdMs > 0) {
          this.inFlight++;
          await new Promise((resolve) => setTimeout(resolve, this.holdMs));
          this.inFlight--;
        }
        res.writeHead(answer.statusCode, { 'content-type': 'application/json' });
        res.end(body);
      } catch {
        res.writeHead(502);
        res.end();
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }
}
