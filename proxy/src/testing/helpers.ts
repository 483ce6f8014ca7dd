import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect as connectTcp, createServer } from 'node:net';
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

export * from './processes.js';

export const sharedRedisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** A BullMQ prefix no other test run uses; every key a test creates lives under it. */
export function uniquePrefix(label: string): string {
  return `sidecar-test-${label}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/**
 * Deletes every key under the prefix, sweeping again until a sweep finds none: a sidecar
 * killed a moment ago may have commands still in Redis's buffer, written after the first.
 */
export async function cleanupRedis(prefix: string, url = sharedRedisUrl): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    for (let sweep = 0; sweep < 5; sweep++) {
      let deleted = 0;
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) deleted += await redis.del(...keys);
      } while (cursor !== '0');
      if (deleted === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
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
