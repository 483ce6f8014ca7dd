import { Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { SidecarMetrics } from '../metrics.js';
import { closeWithConnection, withTimeout } from '../queue/connection.js';
import type { EventsJobData } from '../queue/producer.js';
import { AbortedError, Notifier, abortable, backoffDelay, sleep } from './backoff.js';
import { Batcher, type Batch, type HeldJob } from './batcher.js';
import type { Deliverer } from './deliverer.js';
import { Lease, type LeaseState } from './lease.js';

export interface DeliveryWorkerOptions {
  queue: string;
  prefix: string;
  batchSize: number;
  batchMs: number;
  lockMs: number;
  shutdownMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

export type WorkerState = 'starting' | 'standby' | 'recovering' | 'delivering' | 'stopping' | 'stopped';

type Held = HeldJob<Job<EventsJobData>>;

/** Why a term ended before a stop; each asks for its own log line, at its own level. */
type TermEnd =
  | { reason: 'lease-lost'; state: LeaseState }
  | { reason: 'redis-reconnected' }
  | { reason: 'unheld-jobs'; jobs: string[] }
  | { reason: 'delivery-failed'; err: string }
  | { reason: 'recovery-failed'; err: string };

/** The abort reason of an ended term: an Error, as code handed the term's signal may rethrow it. */
class TermEnded extends Error {
  constructor(readonly end: TermEnd) {
    super(`delivery term ended: ${end.reason}`);
    this.name = 'TermEnded';
  }
}

/**
 * Sets a job's lock to our token, but only while the job exists, so a lock is never left
 * behind for a job that was completed in the meantime. BullMQ keeps the lock of job <id> at
 * <prefix>:<queue>:<id>:lock and checks it on completion; owning that key is owning the job.
 */
const claimScript = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`;

/**
 * Which of the candidate jobs (ids in ARGV[2..]; KEYS[2j] and KEYS[2j+1] are job j's hash and
 * lock) are still active under a lock the current term did not set (ARGV[1] is the term's token
 * prefix): nobody is delivering those. One script, so that a job completed in the meantime, its
 * lock gone with it, is not mistaken for one.
 */
const unheldScript = `
local active = {}
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do active[id] = true end
local unheld = {}
for j = 1, #ARGV - 1 do
  local id = ARGV[j + 1]
  if active[id] and redis.call('EXISTS', KEYS[2 * j]) == 1 then
    local lock = redis.call('GET', KEYS[2 * j + 1])
    if not lock or string.sub(lock, 1, #ARGV[1]) ~= ARGV[1] then unheld[#unheld + 1] = id end
  end
end
return unheld`;

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
  /** Delivered jobs whose completion in Redis is still pending. */
  private readonly completing = new Map<string, Held>();
  private readonly lease: Lease;
  private readonly stopRequested = new AbortController();
  /** Fires when the shutdown grace period is over and in-flight work must be abandoned. */
  private readonly hardStop = new AbortController();
  /** The current period as lease holder; aborted when the lease is lost. */
  private term: AbortController | undefined;
  private readonly wake = new Notifier();
  private readonly room = new Notifier();
  private completions: Promise<void> = Promise.resolve();
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
    private readonly control: Redis,
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
        this.logTermEnd(term);
        continue;
      }
      try {
        await this.recover();
      } catch (err) {
        this.endTerm(term, { reason: 'recovery-failed', err: (err as Error).message });
        this.logTermEnd(term);
        await this.wake.wait(stop, 1000);
        continue;
      }
      if (stop.aborted) break;
      this._state = 'delivering';
      this.log.info('delivering');
      this.sending = this.sendLoop(term.signal);
      await Promise.all([this.fetchLoop(term.signal), this.sending]);
      this.logTermEnd(term);
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

  /** Says why the term ended, if it did (a stop ends none). */
  private logTermEnd(term: AbortController): void {
    const ended = term.signal.reason;
    if (!(ended instanceof TermEnded)) return;
    const end = ended.end;
    switch (end.reason) {
      case 'lease-lost':
        this.log.warn(
          { reason: end.reason, state: end.state },
          end.state === 'taken'
            ? 'delivery lease lost to another process; handing undelivered jobs back'
            : 'delivery lease lost: Redis did not confirm it in time; handing undelivered jobs back',
        );
        break;
      case 'redis-reconnected':
        // Not a failure: the next term claims the active jobs in order, ours among them.
        this.log.info({ reason: end.reason }, 'Redis connection re-established; claiming active jobs again');
        break;
      case 'unheld-jobs':
        this.log.warn({ reason: end.reason, jobs: end.jobs }, 'active jobs nobody is delivering; claiming every active job again');
        break;
      case 'delivery-failed':
        this.log.error({ reason: end.reason, err: end.err }, 'unexpected delivery failure; restarting delivery from Redis');
        break;
      case 'recovery-failed':
        this.log.warn({ reason: end.reason, err: end.err }, 'could not recover abandoned jobs; retrying');
        break;
    }
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
    const ids = await this.control.lrange(this.worker.keys.active, 0, -1);
    const orphans = ids.filter((id) => !this.batcher.has(id) && !this.completing.has(id)).sort(byJobId);
    if (orphans.length === 0) return;
    const tokens = orphans.map(() => this.nextToken());
    await this.claim(orphans.map((id, i) => ({ id, token: tokens[i] })));
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
      this.complete([{ id: job.id!, job, token, events, taken: 0, done: 0, heldSince: Date.now() }]);
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
      if (this.batcher.unsent >= this.options.batchSize) {
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
    const { batchSize, batchMs } = this.options;
    while (!stop.aborted) {
      if (this.batcher.unsent === 0) {
        await this.wake.wait(stop);
        continue;
      }
      // A batch leaves when it is full or when its oldest event has waited batchMs.
      while (this.batcher.unsent < batchSize && !stop.aborted) {
        const wait = this.batcher.oldestUnsentSince! + batchMs - Date.now();
        if (wait <= 0) break;
        await this.wake.wait(stop, wait);
      }
      if (stop.aborted) break;
      const batch = this.batcher.take(batchSize);
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

  private settle(batch: Batch<Job<EventsJobData>>): void {
    const complete = this.batcher.settle(batch);
    for (const h of complete) this.batcher.release(h.id);
    this.metrics.bufferedEvents.set(this.buffered);
    if (complete.length > 0) this.complete(complete);
  }

  /** Completion runs behind delivery so a slow Redis doesn't hold up the next batch. */
  private complete(jobs: Held[]): void {
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
              await this.claim([h]);
            } catch {
              // Redis away again: the next attempt will tell.
            }
            continue;
          }
          if (this.hardStop.signal.aborted) return;
          if (attempt === 1) this.log.warn({ err: message, jobId: h.id }, 'cannot complete job in Redis; retrying');
          await sleep(backoffDelay(attempt, 100, 2000), this.hardStop.signal).catch(() => {});
        }
      }
    } finally {
      this.completing.delete(h.id);
    }
  }

  /**
   * Sets our locks on the jobs. A pipeline resolves even when some of its commands failed; a
   * job whose claim failed is not ours (its old lock stands, and our completion would be
   * refused), so any failure throws.
   */
  private async claim(jobs: { id: string; token: string }[]): Promise<void> {
    const pipeline = this.control.pipeline();
    for (const h of jobs) pipeline.eval(claimScript, 2, this.worker.toKey(h.id), `${this.worker.toKey(h.id)}:lock`, h.token, this.options.lockMs);
    const results = await pipeline.exec();
    if (!results) throw new Error('job claims were discarded');
    const failed = results.findIndex(([err]) => err);
    if (failed >= 0) throw new Error(`cannot claim job ${jobs[failed].id}: ${results[failed][0]!.message}`);
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
      const jobs = [...this.batcher.held(), ...this.completing.values()];
      if (jobs.length > 0) {
        const failed = await withTimeout(
          this.worker.extendJobLocks(jobs.map((h) => h.id), jobs.map((h) => h.token), this.options.lockMs),
          Math.max(100, Math.floor(this.options.lockMs / 3)),
          'lock extension',
        );
        if (failed.length > 0) {
          const lost = new Set(failed);
          await this.claim(jobs.filter((h) => lost.has(h.id)));
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
    const ids = await this.control.lrange(this.worker.keys.active, 0, -1);
    const candidates = ids.filter((id) => !this.batcher.has(id) && !this.completing.has(id));
    if (candidates.length === 0) return;
    const keys = [this.worker.keys.active, ...candidates.flatMap((id) => [this.worker.toKey(id), `${this.worker.toKey(id)}:lock`])];
    const unheld = (await this.control.eval(unheldScript, keys.length, ...keys, ours, ...candidates)) as string[];
    if (unheld.length > 0) this.endTerm(term, { reason: 'unheld-jobs', jobs: unheld });
  }

  /**
   * Stops fetching, lets the batch in flight finish, completes what was delivered, closes the
   * worker, and releases the lease so a successor starts at once, all by `deadline` (epoch ms;
   * default shutdownMs from now), whatever Redis or the vault are doing. Jobs not delivered stay active in Redis
   * and are claimed by the next holder; a batch the vault recorded but we did not hear about is
   * resent and deduplicated. Resolves to whether the work in hand finished (false: some was
   * left to the next holder).
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
    const completed = await Promise.race([this.completions.then(() => true), sleepUntilAborted(this.hardStop.signal).then(() => false)]);
    clearInterval(this.heartbeatTimer);
    const abandoned = this.hardStop.signal.aborted;
    this.hardStop.abort();
    clearTimeout(graceTimer);
    // The worker is closed before the lease is let go: a fetch still open in Redis (blocked,
    // or resent by ioredis after a reconnect) could otherwise move a job to active once a
    // successor holds the lease and fetches the jobs behind it, which it would then deliver
    // first. Closing interrupts the fetch and makes it settle; only a connection with no
    // socket (Redis away) may leave it pending, and a connection we closed never reconnects,
    // so what it holds can no longer reach Redis. A last stretch is kept for the release.
    const socketOpen = ['connecting', 'connect', 'ready'].includes(this.workerRedis.status);
    const fetchDone = withTimeout(
      closeWithConnection(this.worker, this.workerRedis, true).then(() => (socketOpen ? this.fetching : undefined)),
      Math.max(0, left() - Math.min(1000, left() / 4)),
      'worker close',
    );
    if (await fetchDone.then(() => true, () => false)) {
      await withTimeout(this.lease.release(), Math.min(1000, left()), 'lease release').catch(() => {});
    } else {
      // Releasing now could hand the queue over while that fetch may still take a job.
      this.log.warn('a fetch from Redis did not settle in time; leaving the delivery lease to expire');
      this.lease.forget();
    }
    await withTimeout(this.running ?? Promise.resolve(), left(), 'delivery loop').catch(() => {});
    this._state = 'stopped';
    this.finishedCleanly = completed && !abandoned;
    return this.finishedCleanly;
  }
}

function byJobId(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  if (Number.isSafeInteger(na) && Number.isSafeInteger(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}

function sleepUntilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
