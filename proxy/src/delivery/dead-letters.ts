import { createHash } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { StampedEvent } from '../ingest/event.js';
import { closeWithConnection } from '../queue/connection.js';
import type { EventProducer } from '../queue/producer.js';
import type { DeadLetterEntry, DeadLetterReason, DeadLetterSink } from './deliverer.js';

export interface DeadLetterData {
  event: StampedEvent;
  reason: DeadLetterReason;
  deadLetteredAt: string;
}

export interface DeadLetter extends DeadLetterData {
  id: string;
  eventId: string;
}

/**
 * The id is derived from the eventId so that dead-lettering is idempotent: after a crash the
 * same batch is redelivered, the vault refuses the same event again, and adding it a second
 * time is a no-op instead of a duplicate entry. (Hashed because BullMQ job ids may not contain
 * ':' and caller-chosen eventIds may.)
 */
export function deadLetterId(eventId: string): string {
  return `dl-${createHash('sha256').update(eventId).digest('hex').slice(0, 32)}`;
}

export function deadLetterQueueName(queue: string): string {
  return `${queue}-dead`;
}

const pageSize = 1000;

/**
 * Dead letters live in a second BullMQ queue that has no worker: entries wait there, visible
 * to the usual BullMQ tooling, until someone replays or discards them.
 */
export class DeadLetterQueue implements DeadLetterSink {
  readonly queue: Queue<DeadLetterData>;

  constructor(
    private readonly redis: Redis,
    options: { queue: string; prefix: string },
    private readonly producer: EventProducer,
  ) {
    this.queue = new Queue<DeadLetterData>(deadLetterQueueName(options.queue), { connection: redis, prefix: options.prefix });
    this.queue.on('error', () => {});
  }

  /** False while the connection is down; the HTTP API answers 503 at once instead of waiting. */
  get available(): boolean {
    return this.redis.status === 'ready';
  }

  async add(entries: DeadLetterEntry[]): Promise<void> {
    const deadLetteredAt = new Date().toISOString();
    await this.queue.addBulk(
      entries.map(({ event, reason }) => ({
        name: 'dead-letter',
        data: { event, reason, deadLetteredAt },
        opts: { jobId: deadLetterId(event.eventId), removeOnComplete: true, removeOnFail: false },
      })),
    );
  }

  async count(): Promise<number> {
    return this.queue.getJobCountByTypes('waiting', 'paused');
  }

  /** Oldest first, which is the order they will be replayed in. */
  async list(offset = 0, limit = 100): Promise<{ total: number; items: DeadLetter[] }> {
    const [total, jobs] = await Promise.all([
      this.count(),
      limit > 0 ? this.queue.getJobs(['waiting', 'paused'], offset, offset + limit - 1, true) : Promise.resolve([]),
    ]);
    return { total, items: jobs.filter(Boolean).map(toDeadLetter) };
  }

  /** Accepts the dead-letter id or the eventId. */
  async get(id: string): Promise<DeadLetter | undefined> {
    const job = await this.find(id);
    return job ? toDeadLetter(job) : undefined;
  }

  async remove(id: string): Promise<boolean> {
    const job = await this.find(id);
    if (!job) return false;
    await job.remove();
    return true;
  }

  /**
   * Puts dead letters back at the end of the delivery queue, keeping their eventIds. They are
   * enqueued before being removed here: a crash in between leaves a copy in both places, which
   * the vault's eventId deduplication makes harmless, whereas the other order could lose them.
   */
  async replay(ids?: string[]): Promise<{ replayed: { id: string; eventId: string }[]; notFound: string[] }> {
    const notFound: string[] = [];
    const jobs: Job<DeadLetterData>[] = [];
    if (ids === undefined) {
      for (let offset = 0; ; offset += pageSize) {
        const page = (await this.queue.getJobs(['waiting', 'paused'], offset, offset + pageSize - 1, true)).filter(Boolean);
        jobs.push(...page);
        if (page.length < pageSize) break;
      }
    } else {
      const seen = new Set<string>();
      for (const id of ids) {
        const job = await this.find(id);
        if (!job) notFound.push(id);
        else if (!seen.has(job.id!)) {
          seen.add(job.id!);
          jobs.push(job);
        }
      }
    }
    for (let i = 0; i < jobs.length; i += pageSize) {
      const chunk = jobs.slice(i, i + pageSize);
      await this.producer.enqueue(chunk.map((job) => job.data.event));
      await Promise.all(chunk.map((job) => job.remove().catch(() => {})));
    }
    return { replayed: jobs.map((job) => ({ id: job.id!, eventId: job.data.event.eventId })), notFound };
  }

  private async find(id: string): Promise<Job<DeadLetterData> | undefined> {
    if (/^dl-[0-9a-f]{32}$/.test(id)) {
      const job = await this.queue.getJob(id);
      if (job) return job;
    }
    return (await this.queue.getJob(deadLetterId(id))) ?? undefined;
  }

  /** Closes the queue and ends the Redis connection it was given (shared with the worker). */
  async close(): Promise<void> {
    await closeWithConnection(this.queue, this.redis);
  }
}

function toDeadLetter(job: Job<DeadLetterData>): DeadLetter {
  return { id: job.id!, eventId: job.data.event.eventId, ...job.data };
}
