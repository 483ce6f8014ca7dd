import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { EventsJobData } from '../queue/producer.js';
import type { ActiveJobs } from './active-jobs.js';
import { backoffDelay, sleep } from './backoff.js';
import type { HeldJob } from './batcher.js';
import type { Lease } from './lease.js';

type Held = HeldJob<Job<EventsJobData>>;

/**
 * Completes (removes) in Redis the jobs DeliveryWorker has delivered. `hardStop` fires when the
 * shutdown grace period is over and in-flight work must be abandoned.
 */
export class Completer {
  /** Delivered jobs whose completion in Redis is still pending. */
  private readonly completing = new Map<string, Held>();
  private completions: Promise<void> = Promise.resolve();

  constructor(
    private readonly lease: Lease,
    private readonly activeJobs: ActiveJobs,
    private readonly hardStop: AbortSignal,
    private readonly log: Logger,
  ) {}

  has(id: string): boolean {
    return this.completing.has(id);
  }

  /** The jobs whose completion is still pending. */
  pending(): Held[] {
    return [...this.completing.values()];
  }

  /** Settles once every completion started so far has finished. */
  get settled(): Promise<void> {
    return this.completions;
  }

  /** Completion runs behind delivery so a slow Redis doesn't hold up the next batch. */
  complete(jobs: Held[]): void {
    for (const h of jobs) this.completing.set(h.id, h);
    this.completions = this.completions
      .then(() => Promise.all(jobs.map((h) => this.completeJob(h))))
      .then(
        () => {},
        // completeJob handles its own failures; this only keeps the chain alive if it didn't.
        (err) => this.log.error({ err: (err as Error).message }, 'job completion failed'),
      );
  }

  private async completeJob(h: Held): Promise<void> {
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await h.job.moveToCompleted('delivered', h.token, false);
          return;
        } catch (err) {
          const message = (err as Error).message ?? '';
          // Gone, or no longer ours: whoever has it now resends it, and the vault dedupes.
          if (/^Missing key|not in the active state|^Lock mismatch/.test(message)) return;
          if (/^Missing lock/.test(message)) {
            // Our lock ran out (Redis was away); as lease holder the job is still ours to finish.
            if (!this.lease.held || attempt > 3) return;
            try {
              await this.activeJobs.claim([h]);
            } catch {
              // Redis away again: the next attempt will tell.
            }
            continue;
          }
          if (this.hardStop.aborted) return;
          if (attempt === 1) this.log.warn({ err: message, jobId: h.id }, 'cannot complete job in Redis; retrying');
          await sleep(backoffDelay(attempt, 100, 2000), this.hardStop).catch(() => {});
        }
      }
    } finally {
      this.completing.delete(h.id);
    }
  }
}
