import { Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { SidecarMetrics } from '../metrics.js';
import { withTimeout } from '../queue/connection.js';
import type { EventsJobData } from '../queue/producer.js';
import { ActiveJobs, byJobId } from './active-jobs.js';
import { AbortedError, Notifier, abortable, backoffDelay, sleep, sleepUntilAborted } from './backoff.js';
import { Batcher, type Batch } from './batcher.js';
import { Completer } from './completer.js';
import type { Deliverer } from './deliverer.js';
import { closeAndHandOver } from './handover.js';
import { Lease } from './lease.js';
import { TermEnded, logTermEnd, type TermEnd } from './term.js';

export interface DeliveryWorkerOptions {
  queue: string;
  prefix: string;
  batchSize: number;
  /** Most bytes of one bulk body (a single larger event goes alone). */
  batchBytes: number;
  batchMs: number;
  lockMs: number;
  shutdownMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

export type WorkerState = 'starting' | 'standby' | 'recovering' | 'delivering' | 'stopping' | 'stopped';

/**
 * Takes events out of the BullMQ queue in batches and hands them to the vault.
 *
 * BullMQ provides the durable queue and moves jobs to "active" under a lock (Worker in manual
 * fetching mode: one fetch loop, one send loop, no processor function). What BullMQ's own
 * stalled-job recovery does not provide is order: it puts abandoned jobs back at the head of
 * the queue in arbitrary order, while a restarted worker may already be delivering newer ones.
 * So instead:
 *
 * - a lease (see Lease) makes this the only delivering process for the queue;
 * - whoever obtains the lease first claims every job still marked active (they can only have
 *   been abandoned by a previous holder that crashed or was stopped mid-batch) and delivers
 *   them, oldest job id first, before fetching anything new; BullMQ's stalled checker is off;
 * - a job is completed (removed) only after the vault recorded, or we dead-lettered, all of its
 *   events, so a crash at any point leaves it active, to be claimed and resent;
 * - a fetch outlives the term it was started in (BullMQ cannot cancel it, and ioredis resends it
 *   after a reconnect), so a new term claims nothing before the previous term's fetch has
 *   settled: whatever it moved to active is then in the list the claim reads;
 * - as a safety net, the holder looks for active jobs whose lock it did not set this term (a late
 *   fetch of a process that lost the lease) and reclaims them, so no job is left behind.
 *
 * Resending can repeat events the vault already recorded just before the crash; the vault
 * answers those from its eventId index without recording them again. The vault therefore sees
 * every event exactly once, in the order Redis accepted them, dead letters aside.
 */
export class DeliveryWorker {
  private _state: WorkerState = 'starting';
  private readonly worker: Worker<EventsJobData>;
  private readonly batcher = new Batcher<Job<EventsJobData>>();
  private readonly completer: Completer;
  private readonly lease: Lease;
  private readonly activeJobs: ActiveJobs;
  private readonly stopRequested = new AbortController();
  /** Fires when the shutdown grace period is over and in-flight work must be abandoned. */
  private readonly hardStop = new AbortController();
  /** The current period as lease holder; aborted when the lease is lost. */
  private term: AbortController | undefined;
  private readonly wake = new Notifier();
  private readonly room = new Notifier();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatBusy = false;
  private running: Promise<void> | undefined;
  private sending: Promise<void> = Promise.resolve();
  private tokenSeq = 0;
  private termSeq = 0;
  /** The fetch last handed to BullMQ, settled or not; it may belong to a term that has ended. */
  private fetching: Promise<unknown> = Promise.resolve();
  /** Times the worker connection was lost, and its value when the current term began. */
  private workerConnectionEpoch = 0;
  private termEpoch = 0;
  private finishedCleanly = true;

  /** `workerRedis` belongs to this worker from now on: stop() ends it. */
  constructor(
    private readonly workerRedis: Redis,
    control: Redis,
    private readonly deliverer: Deliverer,
    private readonly options: DeliveryWorkerOptions,
    private readonly metrics: SidecarMetrics,
    private readonly log: Logger,
  ) {
    this.worker = new Worker<EventsJobData>(options.queue, null, {
      connection: workerRedis,
      prefix: options.prefix,
      autorun: false,
      lockDuration: options.lockMs,
      skipStalledCheck: true,
      skipLockRenewal: true,
      drainDelay: 2,
      removeOnComplete: { count: 0 },
    });
    this.worker.on('error', (err) => this.log.debug({ err: err.message }, 'bullmq worker error'));
    // ioredis resends, after a reconnect, every command the lost connection left unanswered
    // (BullMQ's blocking fetch needs that). A moveToActive that Redis ran, and persisted, just
    // before it went away is thus run a second time: the job the first run made active (under
    // a lock nobody renews) is never handed to us, and only a recover() would find it. So a
    // term in which this connection dropped ends once it is back, and the next one claims
    // every active job again, in order.
    workerRedis.on('close', () => this.workerConnectionEpoch++);
    workerRedis.on('ready', () => {
      const term = this.term;
      if (!term || term.signal.aborted || this.termEpoch === this.workerConnectionEpoch) return;
      this.endTerm(term, { reason: 'redis-reconnected' });
    });
    this.lease = new Lease(control, `${options.prefix}:${options.queue}:sidecar-lease`, options.lockMs);
    this.activeJobs = new ActiveJobs(control, this.worker, options.lockMs);
    this.completer = new Completer(this.lease, this.activeJobs, this.hardStop.signal, log);
  }

  /** Why the vault refuses this sidecar (`http 401`), while it does. */
  get vaultRefusal(): string | undefined {
    return this.deliverer.refusedBy;
  }

  /** Why the vault could not be reached (`econnrefused`, `http 503`), while it cannot. */
  get vaultFailure(): string | undefined {
    return this.deliverer.failingWith;
  }

  get state(): WorkerState {
    return this._state;
  }

  /** Events this process holds that the vault has not acknowledged yet. */
  get buffered(): number {
    let n = 0;
    for (const h of this.batcher.held()) n += h.events.length - h.done;
    return n;
  }

  start(): void {
    if (this.running) return;
    this.running = this.run().catch((err) => {
      this.log.fatal({ err: (err as Error).message }, 'delivery loop crashed');
      this._state = 'stopped';
    });
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), Math.max(100, Math.floor(this.options.lockMs / 3)));
  }

  /** Lock tokens name the term, so a lock set by an ended term's late fetch is told apart. */
  private termTokenPrefix(): string {
    return `${this.lease.token}:${this.termSeq}:`;
  }

  private nextToken(): string {
    return `${this.termTokenPrefix()}${++this.tokenSeq}`;
  }

  private async run(): Promise<void> {
    const stop = this.stopRequested.signal;
    while (!stop.aborted) {
      const lease = await this.lease.refresh();
      if (lease !== 'held') {
        if (this._state !== 'standby' && lease === 'taken') this.log.info('another process is delivering from this queue; standing by');
        this._state = 'standby';
        await this.wake.wait(stop, lease === 'unknown' ? 200 : Math.min(1000, this.options.lockMs / 3));
        continue;
      }
      const term = new AbortController();
      this.term = term;
      this.termSeq++;
      this.termEpoch = this.workerConnectionEpoch;
      this._state = 'recovering';
      // The previous term's fetch may still move a job to active: its BZPOPMIN, on BullMQ's
      // own connection, is resent whenever that connection is back, maybe after ours, and the
      // move follows. Claiming before it settles would leave that job active with nobody
      // delivering it, while this term fetches and delivers the ones after it.
      if (!(await this.previousFetchSettled(AbortSignal.any([term.signal, stop])))) {
        logTermEnd(this.log, term);
        continue;
      }
      try {
        await this.recover();
      } catch (err) {
        this.endTerm(term, { reason: 'recovery-failed', err: (err as Error).message });
        logTermEnd(this.log, term);
        await this.wake.wait(stop, 1000);
        continue;
      }
      if (stop.aborted) break;
      this._state = 'delivering';
      this.log.info('delivering');
      this.sending = this.sendLoop(term.signal);
      await Promise.all([this.fetchLoop(term.signal), this.sending]);
      logTermEnd(this.log, term);
      // Jobs not yet delivered are left active for whoever holds the lease now (possibly us
      // again, once Redis answers), which claims them in order.
      if (!stop.aborted) this.batcher.clear();
    }
  }

  private endTerm(term: AbortController, end: TermEnd): void {
    if (term.signal.aborted) return;
    term.abort(new TermEnded(end));
    this.wake.notify();
    this.room.notify();
  }

  /** False when the signal fired first. */
  private async previousFetchSettled(signal: AbortSignal): Promise<boolean> {
    const slow = setTimeout(() => this.log.info('waiting for the previous fetch from Redis to settle before claiming active jobs'), 5000);
    try {
      await abortable(this.fetching, signal);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(slow);
    }
  }

  /** Claims every active job this process does not already hold and queues them, oldest first. */
  private async recover(): Promise<void> {
    const ids = await this.activeJobs.ids();
    const orphans = ids.filter((id) => !this.batcher.has(id) && !this.completer.has(id)).sort(byJobId);
    if (orphans.length === 0) return;
    const tokens = orphans.map(() => this.nextToken());
    await this.activeJobs.claim(orphans.map((id, i) => ({ id, token: tokens[i] })));
    const jobs = await Promise.all(orphans.map((id) => Job.fromId<EventsJobData>(this.worker, id)));
    let events = 0;
    jobs.forEach((job, i) => {
      if (!job) return;
      events += this.hold(job, tokens[i]);
    });
    this.log.info({ jobs: orphans.length, eventCount: events }, 'claimed jobs abandoned by a previous delivery process');
  }

  private hold(job: Job<EventsJobData>, token: string): number {
    const events = Array.isArray(job.data?.events) ? job.data.events : [];
    if (events.length === 0) {
      this.log.warn({ jobId: job.id }, 'job without events; completing it');
      this.completer.complete([{ id: job.id!, job, token, events, sizes: [], taken: 0, done: 0, heldSince: Date.now() }]);
      return 0;
    }
    this.batcher.add(job.id!, job, token, events);
    this.wake.notify();
    return events.length;
  }

  private async fetchLoop(term: AbortSignal): Promise<void> {
    const stop = AbortSignal.any([term, this.stopRequested.signal]);
    let failures = 0;
    while (!stop.aborted) {
      // Fetch ahead by one batch at most: enough to keep the vault busy, little to resend.
      if (this.batchFull()) {
        await this.room.wait(stop);
        continue;
      }
      const token = this.nextToken();
      let job: Job<EventsJobData> | undefined;
      try {
        // Not waited on past a stop: with Redis gone the fetch may never settle. A job it
        // still fetches afterwards stays active; our next term waits for it before claiming.
        const fetch = this.worker.getNextJob(token, { block: true });
        this.fetching = fetch.catch(() => {});
        job = await abortable(fetch, stop);
        failures = 0;
      } catch (err) {
        if (stop.aborted) break;
        failures++;
        if (failures === 1) this.log.warn({ err: (err as Error).message }, 'cannot fetch jobs from Redis; retrying');
        await sleep(backoffDelay(failures, 100, 2000), stop).catch(() => {});
        continue;
      }
      if (!job) continue;
      // A job fetched after we stopped stays active; the next holder claims it in order.
      if (stop.aborted) break;
      this.hold(job, token);
    }
  }

  private async sendLoop(term: AbortSignal): Promise<void> {
    const stop = AbortSignal.any([term, this.stopRequested.signal]);
    const abandon = AbortSignal.any([term, this.hardStop.signal]);
    const { batchSize, batchBytes, batchMs } = this.options;
    while (!stop.aborted) {
      if (this.batcher.unsent === 0) {
        await this.wake.wait(stop);
        continue;
      }
      // A batch leaves when it is full or when its oldest event has waited batchMs.
      while (!this.batchFull() && !stop.aborted) {
        const wait = this.batcher.oldestUnsentSince! + batchMs - Date.now();
        if (wait <= 0) break;
        await this.wake.wait(stop, wait);
      }
      if (stop.aborted) break;
      const batch = this.batcher.take(batchSize, batchBytes);
      this.room.notify();
      try {
        await this.deliverer.deliver(batch.events, abandon);
      } catch (err) {
        if (!(err instanceof AbortedError) && !abandon.aborted && this.term) {
          this.endTerm(this.term, { reason: 'delivery-failed', err: (err as Error).message });
        }
        break;
      }
      this.settle(batch);
    }
  }

  /** A batch's worth of events is waiting, by count or by bytes. */
  private batchFull(): boolean {
    return this.batcher.unsent >= this.options.batchSize || this.batcher.unsentBytes >= this.options.batchBytes;
  }

  private settle(batch: Batch<Job<EventsJobData>>): void {
    const complete = this.batcher.settle(batch);
    for (const h of complete) this.batcher.release(h.id);
    this.metrics.bufferedEvents.set(this.buffered);
    if (complete.length > 0) this.completer.complete(complete);
  }

  /** Keeps the lease and the locks of held jobs alive; drops delivery if the lease is gone. */
  private async heartbeat(): Promise<void> {
    const term = this.term;
    if (this.heartbeatBusy || !term || term.signal.aborted) return;
    this.heartbeatBusy = true;
    try {
      const state = await this.lease.refresh();
      if (state === 'taken' || (state === 'unknown' && !this.lease.held)) {
        this.endTerm(term, { reason: 'lease-lost', state });
        return;
      }
      if (state !== 'held') return;
      const jobs = [...this.batcher.held(), ...this.completer.pending()];
      if (jobs.length > 0) {
        const failed = await withTimeout(
          this.worker.extendJobLocks(jobs.map((h) => h.id), jobs.map((h) => h.token), this.options.lockMs),
          Math.max(100, Math.floor(this.options.lockMs / 3)),
          'lock extension',
        );
        if (failed.length > 0) {
          const lost = new Set(failed);
          await this.activeJobs.claim(jobs.filter((h) => lost.has(h.id)));
        }
      }
      if (this._state === 'delivering' && this.term === term) await this.reclaimUnheld(term);
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'heartbeat failed');
    } finally {
      this.metrics.bufferedEvents.set(this.buffered);
      this.heartbeatBusy = false;
    }
  }

  /**
   * Ends the term when some active job is delivered by nobody, so that the next term claims it
   * with the rest, in order. A process that lost the lease may still move a job to active after
   * we claimed what was active (its blocking fetch returns late, or ioredis resends it after a
   * reconnect), and a completion that gave up leaves its job active too. Nothing else looks at
   * active jobs while the lease stays ours, so such a job would wait forever. Our own fetch in
   * flight is not one of them: it locks its job with a token of this term.
   */
  private async reclaimUnheld(term: AbortController): Promise<void> {
    const ours = this.termTokenPrefix();
    const ids = await this.activeJobs.ids();
    const candidates = ids.filter((id) => !this.batcher.has(id) && !this.completer.has(id));
    if (candidates.length === 0) return;
    const unheld = await this.activeJobs.unheld(candidates, ours);
    if (unheld.length > 0) this.endTerm(term, { reason: 'unheld-jobs', jobs: unheld });
  }

  /**
   * Stops fetching, lets the batch in flight finish, completes what was delivered, closes the
   * worker, and releases the lease so a successor starts at once, all by `deadline` (epoch ms;
   * default shutdownMs from now), whatever Redis or the vault are doing. Jobs not delivered
   * stay active in Redis and are claimed by the next holder; a batch the vault recorded but we
   * did not hear about is resent and deduplicated. Resolves to whether the work in hand
   * finished (false: some was left to the next holder).
   */
  async stop(deadline = Date.now() + this.options.shutdownMs): Promise<boolean> {
    if (this._state === 'stopped' || this.stopRequested.signal.aborted) {
      await this.running;
      return this.finishedCleanly;
    }
    this._state = 'stopping';
    const left = () => Math.max(0, deadline - Date.now());
    // The batch in flight may use the time but a last stretch, kept for Redis bookkeeping.
    const graceTimer = setTimeout(() => this.hardStop.abort(), Math.max(0, left() - Math.min(1000, left() / 4)));
    this.stopRequested.abort();
    this.wake.notify();
    this.room.notify();
    await this.sending;
    const completed = await Promise.race([this.completer.settled.then(() => true), sleepUntilAborted(this.hardStop.signal).then(() => false)]);
    clearInterval(this.heartbeatTimer);
    const abandoned = this.hardStop.signal.aborted;
    this.hardStop.abort();
    clearTimeout(graceTimer);
    await closeAndHandOver(this.worker, this.workerRedis, () => this.fetching, this.lease, this.log, left);
    await withTimeout(this.running ?? Promise.resolve(), left(), 'delivery loop').catch(() => {});
    this._state = 'stopped';
    this.finishedCleanly = completed && !abandoned;
    return this.finishedCleanly;
  }
}

