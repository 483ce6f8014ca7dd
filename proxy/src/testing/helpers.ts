import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as connectTcp, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import type { SidecarConfig } from '../config.js';
import { startSidecar, type SidecarHandle } from '../index.js';
import { createLogger } from '../logger.js';
import type { ExternalActivityEvent, StampedEvent } from '../ingest/event.js';
import { jobName, type EventsJobData } from '../queue/producer.js';
import { FakeVault } from './fake-vault.js';

export const sharedRedisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** A BullMQ prefix no other test run uses; every key a test creates lives under it. */
export function uniquePrefix(label: string): string {
  return `sidecar-test-${label}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** Deletes every key under the prefix. */
export async function cleanupRedis(prefix: string, url = sharedRedisUrl): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } catch {
    // Redis already gone (a test's own server): nothing to clean.
  } finally {
    redis.disconnect();
  }
}

export async function countKeys(prefix: string, url = sharedRedisUrl): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    let n = 0;
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      n += keys.length;
    } while (cursor !== '0');
    return n;
  } finally {
    redis.disconnect();
  }
}

/** Polls until `check` returns a truthy value or the deadline passes. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 20_000, intervalMs = 50, message = 'condition' }: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<Exclude<T, undefined | null | false | 0 | ''>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as Exclude<T, undefined | null | false | 0 | ''>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${message}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * A port on 127.0.0.1 where nothing listens, for a Redis, vault or upstream that must be away.
 * Not one freePort() released: another test's server may be given it next, and would answer.
 * Ports below the ephemeral range are never given to a server that listens on port 0, so one
 * that refuses connections now (checked, in case this machine runs something there) stays so.
 */
export async function closedPort(): Promise<number> {
  for (const port of [1, 9, 47, 91, 199]) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connectTcp(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
    });
    if (refused) return port;
  }
  throw new Error('no closed port below the ephemeral range on 127.0.0.1');
}

/** A valid event; `i` makes its subject and attribute distinguishable in assertions. */
export function makeEvent(i: number, overrides: Partial<ExternalActivityEvent> = {}): ExternalActivityEvent {
  return {
    eventType: 'STORE',
    applicationId: 'test-app',
    subjectId: `subject-${i}`,
    data: { attribute: 'email', value: `user${i}@example.test` },
    ...overrides,
  };
}

export interface IngestAnswer {
  status: number;
  body: {
    accepted: { index: number; eventId: string; dataPointId?: string }[];
    rejected: { index: number; message: string }[];
    message?: string;
  };
}

export async function postEvents(baseUrl: string, body: unknown): Promise<IngestAnswer> {
  const res = await fetch(`${baseUrl}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as IngestAnswer['body'] };
}

/** `requests` ingest requests of `perRequest` events each, numbered from `offset`; the ids accepted, in order. */
export async function postMany(baseUrl: string, requests: number, perRequest: number, offset = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let r = 0; r < requests; r++) {
    const answer = await postEvents(baseUrl, Array.from({ length: perRequest }, (_, i) => makeEvent(offset + r * perRequest + i)));
    if (answer.status !== 202) throw new Error(`ingest answered ${answer.status}`);
    ids.push(...answer.body.accepted.map((a) => a.eventId));
  }
  return ids;
}

/** The port was taken by another process (another test's server) before ours could listen on it. */
class PortTaken extends Error {}

/** A redis-server of the test's own, with AOF fsynced on every write, that can be killed and restarted. */
export class OwnRedis {
  private child: ChildProcess | undefined;

  constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  /**
   * A started server on a free port, its files in a temporary directory of its own. Test files
   * run side by side, so the port freePort() released may be taken before redis-server binds
   * it; then another one is tried.
   */
  static async started(label: string): Promise<OwnRedis> {
    const dir = mkdtempSync(join(tmpdir(), `${label}-`));
    for (let attempt = 1; ; attempt++) {
      const redis = new OwnRedis(await freePort(), dir);
      try {
        await redis.start();
        return redis;
      } catch (err) {
        if (!(err instanceof PortTaken) || attempt >= 5) {
          rmSync(dir, { recursive: true, force: true });
          throw err;
        }
      }
    }
  }

  /** Kills the server and removes its directory. */
  async dispose(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Starts redis-server and waits until it answers: it, not another process's server on the
   * port (one that took it while this one was down answers PING all the same), which is why
   * the answering server's process id must be this child's.
   */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--appendonly', 'yes', '--appendfsync', 'always',
        '--dir', this.dir, '--save', '', '--maxmemory-policy', 'noeviction', '--daemonize', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = once(child, 'exit');
    let settled = false;
    const ready = (async () => {
      const deadline = Date.now() + 10_000;
      while (!settled) {
        const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        probe.on('error', () => {});
        try {
          await probe.connect();
          const server = await probe.info('server');
          if (!new RegExp(`^process_id:${child.pid}\\r?$`, 'm').test(server)) throw new PortTaken(`port ${this.port} is another process's Redis`);
          const loading = (await probe.info('persistence')).includes('loading:1');
          if (!loading && (await probe.ping()) === 'PONG') return;
        } catch (err) {
          if (err instanceof PortTaken) throw err;
        } finally {
          probe.disconnect();
        }
        if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not answer within 10 s:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      await Promise.race([
        ready,
        exited.then(() => {
          if (/address already in use/i.test(output)) throw new PortTaken(`port ${this.port} was taken:\n${output}`);
          throw new Error(`redis-server exited before answering:\n${output}`);
        }),
      ]);
    } catch (err) {
      await this.kill();
      throw err;
    } finally {
      settled = true;
      ready.catch(() => {});
    }
  }

  /** CONFIG SET on this server alone (never on the shared one), e.g. a `maxmemory` to fill. */
  async configSet(parameter: string, value: string): Promise<void> {
    const client = new Redis(this.url, { maxRetriesPerRequest: 1 });
    try {
      await client.config('SET', parameter, value);
    } finally {
      client.disconnect();
    }
  }

  /**
   * SIGSTOP: the server keeps its connections open, so clients still see it as connected, but
   * answers nothing until resume(). What it is sent meanwhile waits in its sockets.
   */
  pause(): void {
    const child = this.child;
    if (child && child.exitCode === null) child.kill('SIGSTOP');
  }

  /** SIGCONT: the server goes on, running whatever it was sent while paused. */
  resume(): void {
    const child = this.child;
    if (child && child.exitCode === null) child.kill('SIGCONT');
  }

  /** SIGKILL: no shutdown save; only what AOF already fsynced survives. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    this.child = undefined;
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
}

export interface SpawnedSidecar {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /**
   * Its own addresses, as its `sidecar listening` line reports them; rejects if it exits
   * first. Never a URL guessed from SIDECAR_PORT: another process's server may answer there.
   */
  listening: Promise<{ url: string; proxyUrl: string | undefined }>;
}

/** A spawned sidecar that listens, at the addresses it reported. */
export interface RunningSidecar extends SpawnedSidecar {
  url: string;
  proxyUrl: string | undefined;
}

/**
 * Settings for a spawned sidecar with short batches, retries and lease, so tests run quickly.
 * Its ports are 0: the kernel gives it free ones as it listens, so no other test's server can
 * take them between a pick and the listen (see `startSpawnedSidecar` for where it listens).
 */
export function spawnedSidecarEnv(options: { apiKey: string; vaultUrl: string; prefix: string; redisUrl?: string }): Record<string, string> {
  return {
    SIDECAR_API_KEY: options.apiKey,
    SIDECAR_VAULT_URL: options.vaultUrl,
    SIDECAR_PORT: '0',
    SIDECAR_PROXY_PORT: '0',
    SIDECAR_PREFIX: options.prefix,
    REDIS_URL: options.redisUrl ?? sharedRedisUrl,
    SIDECAR_BATCH_SIZE: '100',
    SIDECAR_BATCH_MS: '20',
    SIDECAR_LOCK_MS: '2000',
    SIDECAR_RETRY_BASE_MS: '20',
    SIDECAR_RETRY_MAX_MS: '200',
    SIDECAR_LOG_LEVEL: 'info',
  };
}

/** Levels above `info` hide the `sidecar listening` line the helpers read the ports from. */
const quietLevels = new Set(['warn', 'error', 'fatal', 'silent']);

/** Runs the CLI exactly as `npm run sidecar` does. */
export function spawnSidecar(env: Record<string, string>): SpawnedSidecar {
  const child = spawn(process.execPath, ['--import', 'tsx', 'proxy/src/main.ts'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let pending = '';
  let reported: ((addresses: { url: string; proxyUrl: string | undefined }) => void) | undefined;
  const listening = new Promise<{ url: string; proxyUrl: string | undefined }>((resolve) => (reported = resolve));
  child.stdout!.on('data', (chunk) => {
    output += chunk;
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.includes('"sidecar listening"')) continue;
      const { url, proxyUrl } = JSON.parse(line) as { url: string; proxyUrl?: string };
      reported!({ url, proxyUrl });
    }
  });
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const level = env.SIDECAR_LOG_LEVEL?.trim() || 'info';
  const addresses = quietLevels.has(level)
    ? Promise.reject(new Error(`SIDECAR_LOG_LEVEL=${level} hides the line that says where the sidecar listens; use info or debug`))
    : Promise.race([
        listening,
        exited.then((code) => {
          throw new Error(`the sidecar exited with ${code} before it listened:\n${output}`);
        }),
      ]);
  // Config-error tests never ask where it listens.
  addresses.catch(() => {});
  return { child, output: () => output, exited, listening: addresses };
}

/**
 * Spawns a sidecar and waits until it listens; resolves to it with its own URLs. A sidecar
 * that cannot listen (its port held by another process) fails this, and is not left running.
 */
export async function startSpawnedSidecar(env: Record<string, string>): Promise<RunningSidecar> {
  const sidecar = spawnSidecar(env);
  try {
    return { ...sidecar, ...(await sidecar.listening) };
  } catch (err) {
    await stopChild(sidecar.child);
    throw err;
  }
}

export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

export const quietLogger = () => pino({ level: process.env.SIDECAR_TEST_LOG ?? 'silent' });

export type LogLine = { level: number; msg: string; component?: string } & Record<string, unknown>;

/**
 * A logger that keeps what it writes, a parsed object per line, for tests of what is logged:
 * the sidecar's own, redaction included, so a test sees each line as an operator would.
 */
export function capturingLogger(level = 'info'): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}

/** Starts an embedded sidecar on free ports with test-friendly timings; the caller closes it. */
export async function startTestSidecar(
  overrides: Partial<SidecarConfig> & { apiKey: string; prefix: string },
  { logger = quietLogger() }: { logger?: Logger } = {},
): Promise<SidecarHandle> {
  return startSidecar(
    { port: 0, proxyPort: 0, batchMs: 20, lockMs: 2000, retryBaseMs: 20, retryMaxMs: 200, shutdownMs: 5000, ...overrides },
    { logger },
  );
}

/**
 * A queue left behind by a delivery process that crashed: `jobs` jobs of `eventsPerJob` events
 * each (event ids ev-0, ev-1, … in queue order), of which that process took the `taken` oldest
 * and never completed them, so they stay active under its locks, valid for a minute. With a
 * fake vault to deliver to; everything, the sidecar too, is closed when the test ends.
 */
export async function queueLeftByCrashedWorker(
  t: ExecutionContext,
  label: string,
  { jobs, eventsPerJob, taken }: { jobs: number; eventsPerJob: number; taken: number },
): Promise<{
  prefix: string;
  vault: FakeVault;
  queue: Queue<EventsJobData>;
  /** The event ids of every job, in queue order. */
  all: string[];
  /** Starts a sidecar delivering from the queue to the vault. */
  startSidecar: (overrides?: Partial<SidecarConfig>, options?: { logger?: Logger }) => Promise<SidecarHandle>;
}> {
  const prefix = uniquePrefix(label);
  const vault = new FakeVault();
  await vault.start();
  const queue = new Queue<EventsJobData>('vault-audit', { connection: { url: sharedRedisUrl }, prefix });
  const crashed = new Worker<EventsJobData>('vault-audit', null, { connection: { url: sharedRedisUrl, maxRetriesPerRequest: null }, prefix, autorun: false, lockDuration: 60_000 });
  let sidecar: SidecarHandle | undefined;
  t.teardown(async () => {
    await sidecar?.close();
    await crashed.close(true);
    await queue.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });

  const stamped = (i: number): StampedEvent => ({ eventType: 'READ', applicationId: 'a', dataPointId: 'd', eventId: `ev-${i}`, timestamp: '2024-01-01T00:00:00Z' });
  const all: string[] = [];
  for (let j = 0; j < jobs; j++) {
    const events = Array.from({ length: eventsPerJob }, (_, k) => stamped(j * eventsPerJob + k));
    all.push(...events.map((e) => e.eventId));
    await queue.add(jobName, { events }, { removeOnComplete: true });
  }
  for (let j = 0; j < taken; j++) t.truthy(await crashed.getNextJob(`dead-token-${j}`, { block: false }));

  const startSidecar = async (overrides: Partial<SidecarConfig> = {}, options: { logger?: Logger } = {}) => {
    sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, ...overrides }, options);
    return sidecar;
  };
  return { prefix, vault, queue, all, startSidecar };
}

export async function getJson<T = any>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export async function metricValue(baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
