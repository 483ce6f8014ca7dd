import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { withoutValue, type StampedEvent } from '../ingest/event.js';
import { closeWithConnection, resetConnection, TimeoutError, withTimeout } from './connection.js';

/** What one BullMQ job carries: the accepted events of one request, in request order. */
export interface EventsJobData {
  events: StampedEvent[];
}

export const jobName = 'events';

export class QueueUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'QueueUnavailableError';
  }

  /** Redis is up but full: it frees no memory by itself, so an operator has to act. */
  get outOfMemory(): boolean {
    return isOutOfMemory(this.cause);
  }
}

/** Redis' refusal of a write once `maxmemory` is reached and its policy evicts nothing. */
export function isOutOfMemory(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('OOM ');
}

const OUT_OF_MEMORY = 'out of memory';

/** Redis' refusals of every write that leave it answering pings and reads. */
function writeRefusalCode(err: unknown): string | undefined {
  return err instanceof Error ? /^(READONLY|MISCONF|NOREPLICAS) /.exec(err.message)?.[1] : undefined;
}

export interface ProducerOptions {
  queue: string;
  prefix: string;
  enqueueTimeoutMs: number;
  /** Requests are merged into one job up to this many events (a bigger request stays whole). */
  maxJobEvents?: number;
  /** Strip `data.value` before anything reaches Redis (SIDECAR_DROP_VALUES). */
  dropValues?: boolean;
}

interface Waiter {
  events: StampedEvent[];
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Puts accepted events into Redis, as BullMQ jobs written by a single Lua script each, so a
 * request's events are enqueued all together or not at all.
 *
 * Enqueues are group-committed: while one job is being written, the requests arriving
 * meanwhile wait and are then written together as the next job. An idle sidecar writes each
 * request at once; a busy one writes one job per Redis round trip instead of one per request,
 * which is what keeps BullMQ's per-job cost (here and in the worker) off the hot path. Jobs
 * are written one at a time, in call order, so Redis has events in the order they came in.
 */
export class EventProducer {
  readonly queue: Queue<EventsJobData>;
  private initialized = false;
  private waiting: Waiter[] = [];
  private flushing = false;
  private readonly maxJobEvents: number;
  private readonly probeKey: string;
  /** When Redis last refused an enqueue for lack of memory; cleared by the next one it takes. */
  private refusedForMemoryAt: number | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly options: ProducerOptions,
  ) {
    this.maxJobEvents = options.maxJobEvents ?? 5000;
    this.probeKey = `${options.prefix}:${options.queue}:sidecar-memory-probe`;
    this.queue = new Queue<EventsJobData>(options.queue, {
      connection: redis,
      prefix: options.prefix,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: false },
    });
    this.queue.on('error', () => {});
    // BullMQ finishes its own setup (script loading, version check) once Redis is first
    // reachable; until then an add() would wait instead of failing, so we refuse instead.
    this.queue.waitUntilReady().then(
      () => (this.initialized = true),
      () => {},
    );
  }

  get connected(): boolean {
    return this.initialized && this.redis.status === 'ready';
  }

  async waitUntilConnected(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.connected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    return this.connected;
  }

  /** Resolves once Redis has the events; any doubt is reported as QueueUnavailableError. */
  enqueue(events: StampedEvent[]): Promise<void> {
    if (!this.connected) return Promise.reject(new QueueUnavailableError('Redis is not reachable'));
    // Every path into Redis (ingest, proxy, dead-letter replay) comes through here.
    if (this.options.dropValues) events = events.map(withoutValue);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        events,
        resolve,
        reject,
        // Still waiting for its turn when the time is up: give up without writing it.
        timer: setTimeout(() => {
          const i = this.waiting.indexOf(waiter);
          if (i >= 0) {
            this.waiting.splice(i, 1);
            reject(new QueueUnavailableError('Redis did not take the events in time'));
          }
        }, this.options.enqueueTimeoutMs),
      };
      this.waiting.push(waiter);
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.waiting.length > 0) {
        let n = 1;
        let count = this.waiting[0].events.length;
        while (n < this.waiting.length && count + this.waiting[n].events.length <= this.maxJobEvents) {
          count += this.waiting[n].events.length;
          n++;
        }
        const group = this.waiting.splice(0, n);
        const events = group.length === 1 ? group[0].events : group.flatMap((w) => w.events);
        let failure: Error | undefined;
        try {
          if (!this.connected) throw new Error('Redis is not reachable');
          await withTimeout(this.queue.add(jobName, { events }), this.options.enqueueTimeoutMs, 'enqueue');
        } catch (err) {
          failure = new QueueUnavailableError('Redis did not confirm the enqueue', { cause: err });
          if (isOutOfMemory(err)) this.refusedForMemoryAt = Date.now();
          // Its callers are told nothing was accepted, so the job must never be written later,
          // as it would be if Redis was cut off by a partition that then ends.
          if (err instanceof TimeoutError) resetConnection(this.redis);
        }
        if (!failure) this.refusedForMemoryAt = undefined;
        for (const w of group) {
          clearTimeout(w.timer);
          if (failure) w.reject(failure);
          else w.resolve();
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Round trip to Redis, for readiness. */
  async ping(timeoutMs = 1000): Promise<boolean> {
    if (!this.connected) return false;
    try {
      return (await withTimeout(this.redis.ping(), timeoutMs, 'ping')) === 'PONG';
    } catch {
      return false;
    }
  }

  /**
   * Whether Redis refuses events, which a ping does not tell: `out of memory`, or `refuses
   * writes (READONLY)` (a replica: a failover left REDIS_URL on the wrong node), `(MISCONF)` (a
   * save failed, so it stops writes) or `(NOREPLICAS)`. Redis counts a command's own arguments
   * against `maxmemory`, so one that refuses a job may still take a smaller write: an enqueue
   * refused for memory in the last `recentMs`, with none taken since, counts. Otherwise a probe
   * asks: LPUSHX on a key that never exists writes nothing, yet Redis refuses it like any
   * command that may add data. Any other failure is left to ping().
   */
  async writeRefusal(timeoutMs = 1000, recentMs = 10_000): Promise<string | undefined> {
    if (!this.connected) return undefined;
    if (this.refusedForMemoryAt !== undefined && Date.now() - this.refusedForMemoryAt < recentMs) return OUT_OF_MEMORY;
    try {
      await withTimeout(this.redis.lpushx(this.probeKey, ''), timeoutMs, 'memory probe');
      return undefined;
    } catch (err) {
      if (isOutOfMemory(err)) return OUT_OF_MEMORY;
      const code = writeRefusalCode(err);
      return code === undefined ? undefined : `refuses writes (${code})`;
    }
  }

  async outOfMemory(): Promise<boolean> {
    return (await this.writeRefusal()) === OUT_OF_MEMORY;
  }

  async counts(): Promise<Record<string, number>> {
    return withTimeout(this.queue.getJobCounts('waiting', 'active', 'delayed', 'paused'), 1000, 'job counts');
  }

  /**
   * Seconds the oldest event not yet delivered has been in the queue (0 when none is): the
   * oldest job of each state, and the other end of the active list, whose order claims change.
   */
  async oldestEventAge(): Promise<number> {
    const jobs = await withTimeout(
      Promise.all([this.queue.getJobs(['active', 'waiting', 'delayed', 'paused', 'prioritized'], 0, 0, true), this.queue.getJobs(['active'], 0, 0, false)]),
      1000,
      'oldest job',
    );
    const oldest = Math.min(...jobs.flat().map((job) => job.timestamp));
    return Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0;
  }

  /** Closes the queue and ends the Redis connection it was given. */
  async close(): Promise<void> {
    await closeWithConnection(this.queue, this.redis);
  }
}
