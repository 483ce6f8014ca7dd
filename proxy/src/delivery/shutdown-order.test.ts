import test from 'ava';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { StampedEvent } from '../ingest/event.js';
import { SidecarMetrics } from '../metrics.js';
import { connect } from '../queue/connection.js';
import { jobName, type EventsJobData } from '../queue/producer.js';
import { FakeVault } from '../testing/fake-vault.js';
import {
  OwnRedis, capturingLogger, cleanupRedis, sharedRedisUrl, startTestSidecar, uniquePrefix, waitFor,
} from '../testing/helpers.js';
import { Deliverer } from './deliverer.js';
import { Lease } from './lease.js';
import { DeliveryWorker } from './worker.js';

/**
 * Once a stopping sidecar has released the delivery lease, a successor may take it and fetch;
 * a fetch of ours still open in Redis must not move a job to active after that point, or the
 * successor delivers the jobs behind that one first. So the lease is released only once our
 * last fetch has settled; when it cannot be made to settle in time, the lease is left to
 * expire. Own file: it patches BullMQ and Lease.
 */

// Fetches started, per BullMQ prefix, to know when one has just begun blocking in Redis.
const fetchesStarted = new Map<string, number>();
const originalGetNextJob = Worker.prototype.getNextJob;
Worker.prototype.getNextJob = function (this: Worker, ...args: Parameters<Worker['getNextJob']>) {
  const prefix = this.opts.prefix ?? '';
  fetchesStarted.set(prefix, (fetchesStarted.get(prefix) ?? 0) + 1);
  return originalGetNextJob.apply(this, args);
};

// What happens right after a lease (by key) is released: stands for a successor's first moves.
const afterRelease = new Map<string, () => Promise<void>>();
const originalRelease = Lease.prototype.release;
Lease.prototype.release = async function (this: Lease) {
  await originalRelease.call(this);
  await afterRelease.get(this.key)?.();
};

test('stop closes the worker before releasing the lease: a job queued once the lease is free stays waiting', async (t) => {
  const prefix = uniquePrefix('stop-order');
  const vault = new FakeVault();
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix });
  const queue = new Queue<EventsJobData>(sidecar.config.queue, { connection: { url: sharedRedisUrl }, prefix });
  t.teardown(async () => {
    await sidecar.close();
    await queue.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  await waitFor(() => sidecar.deliveryState === 'delivering', { message: 'delivering' });

  const leaseKey = `${prefix}:${sidecar.config.queue}:sidecar-lease`;
  let releasedWhileQueued: number | undefined;
  afterRelease.set(leaseKey, async () => {
    const event: StampedEvent = { eventType: 'READ', applicationId: 'a', dataPointId: 'd', eventId: 'after-release', timestamp: '2024-01-01T00:00:00Z' };
    await queue.add(jobName, { events: [event] }, { removeOnComplete: true });
    // Time enough for a fetch still open in Redis to move the job to active.
    await new Promise((resolve) => setTimeout(resolve, 300));
    releasedWhileQueued = await queue.getWaitingCount();
  });

  // Idle, the worker blocks in Redis for a job (BullMQ's drain delay, 2 s). Stopping just
  // after such a fetch began leaves it open, unless stop() ends it before the release.
  const started = fetchesStarted.get(prefix) ?? 0;
  await waitFor(() => (fetchesStarted.get(prefix) ?? 0) > started, { intervalMs: 5, message: 'a fetch started' });
  await sidecar.close();

  t.is(releasedWhileQueued, 1, 'the lease was released, and the job queued after it is waiting');
  t.is(await queue.getActiveCount(), 0, 'no fetch of the stopped worker moved it to active');
  const admin = new Redis(sharedRedisUrl);
  t.is(await admin.exists(leaseKey), 0, 'the lease is free for a successor at once');
  admin.disconnect();
});

test('a fetch that Redis leaves unanswered past the deadline: stop returns in time and leaves the lease to expire, unreleased', async (t) => {
  const redis = await OwnRedis.started('sidecar-stop-frozen');
  const admin = new Redis(redis.url);
  const workerRedis = connect(redis.url, 'worker');
  const control = connect(redis.url, 'control');
  const { logger, lines } = capturingLogger();
  const metrics = new SidecarMetrics();
  const prefix = uniquePrefix('stop-frozen');
  // Long enough that the lease outlives the frozen stretch (at most lockMs/3 since the last
  // refresh, plus stopMs), so what Redis holds once it answers again can be looked at.
  const lockMs = 6000;
  const stopMs = 1500;
  // Nothing is queued: the worker only ever sits in its blocking fetch.
  const deliverer = new Deliverer(
    { send: async () => { throw new Error('nothing is queued in this test'); } },
    { add: async () => {} },
    { maxRetries: undefined, retryBaseMs: 20, retryMaxMs: 200 },
    metrics,
    logger.child({ component: 'delivery' }),
  );
  const worker = new DeliveryWorker(
    workerRedis,
    control,
    deliverer,
    { queue: 'vault-audit', prefix, batchSize: 100, batchBytes: 8 << 20, batchMs: 20, lockMs, shutdownMs: 5000, retryBaseMs: 20, retryMaxMs: 200 },
    metrics,
    logger.child({ component: 'worker' }),
  );
  t.teardown(async () => {
    // Never leave the server stopped, whatever failed.
    redis.resume();
    await worker.stop(Date.now() + 1000);
    control.disconnect();
    admin.disconnect();
    await redis.dispose();
  });
  worker.start();
  await waitFor(() => worker.state === 'delivering', { message: 'delivering' });

  const leaseKey = `${prefix}:vault-audit:sidecar-lease`;
  const token = await admin.get(leaseKey);
  t.truthy(token, 'the worker holds the lease');

  // Idle, the worker blocks in Redis for a job. Freezing Redis just after such a fetch began
  // leaves the fetch open on a connection that is still up: closing the worker cannot end it.
  const started = fetchesStarted.get(prefix) ?? 0;
  await waitFor(() => (fetchesStarted.get(prefix) ?? 0) > started, { intervalMs: 5, message: 'a fetch started' });
  redis.pause();
  const deadline = Date.now() + stopMs;
  await worker.stop(deadline);
  const stoppedAt = Date.now();
  t.true(stoppedAt <= deadline + 300, `stop() returned ${stoppedAt - deadline} ms after its deadline`);
  t.is(worker.state, 'stopped');
  t.true(
    lines.some((l) => l.component === 'worker' && l.level === 40 && l.msg === 'a fetch from Redis did not settle in time; leaving the delivery lease to expire'),
    'the lease left to expire is logged, at warn',
  );

  // Redis now runs whatever was sent to it while frozen: a release would delete the lease here.
  redis.resume();
  const resumedAt = Date.now();
  t.is(await admin.get(leaseKey), token, 'the lease is still held by the stopped worker');
  const ttl = await admin.pttl(leaseKey);
  t.true(ttl > 0 && ttl <= lockMs, `the lease runs out by itself (PTTL ${ttl} ms, lockMs ${lockMs})`);

  // Nobody releases or renews it: it stays ours until it expires, within lockMs.
  const holders = new Set<string | null>();
  await waitFor(async () => {
    const holder = await admin.get(leaseKey);
    holders.add(holder);
    return holder === null;
  }, { timeoutMs: lockMs + 1000, intervalMs: 50, message: 'the lease to expire' });
  const expiredAfter = Date.now() - resumedAt;
  t.deepEqual([...holders].filter((h) => h !== null), [token], 'held by the stopped worker until it expired');
  t.true(expiredAfter >= ttl - 100, `not gone before its term (${expiredAfter} ms after Redis answered again, PTTL was ${ttl} ms)`);
  t.true(expiredAfter <= lockMs + 200, `expired ${expiredAfter} ms after Redis answered again (lockMs ${lockMs})`);
});
