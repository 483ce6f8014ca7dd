import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { StampedEvent } from '../ingest/event.js';
import { withTimeout } from './connection.js';

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
}

export interface ProducerOptions {
  queue: string;
  prefix: string;
  enqueueTimeoutMs: number;
}

/**
 * Puts accepted events into Redis. One job per request keeps Redis work proportional to
 * requests, not events; the worker splits and merges jobs into vault batches. A job is written
 * by a single Lua script, so a request's events are enqueued all together or not at all.
 */
export class EventProducer {
  readonly queue: Queue<EventsJobData>;
  private initialized = false;

  constructor(
    private readonly redis: Redis,
    private readonly options: ProducerOptions,
  ) {
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
  async enqueue(events: StampedEvent[]): Promise<string> {
    if (!this.connected) throw new QueueUnavailableError('Redis is not reachable');
    try {
      const job = await withTimeout(
        this.queue.add(jobName, { events }),
        this.options.enqueueTimeoutMs,
        'enqueue',
      );
      return job.id!;
    } catch (err) {
      throw new QueueUnavailableError('Redis did not confirm the enqueue', { cause: err });
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

  async counts(): Promise<Record<string, number>> {
    return withTimeout(this.queue.getJobCounts('waiting', 'active', 'delayed', 'paused'), 1000, 'job counts');
  }

  async close(): Promise<void> {
    await this.queue.close().catch(() => {});
  }
}
