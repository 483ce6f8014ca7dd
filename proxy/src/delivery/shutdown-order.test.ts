import test from 'ava';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { StampedEvent } from '../ingest/event.js';
import { jobName, type EventsJobData } from '../queue/producer.js';
import { FakeVault } from '../testing/fake-vault.js';
import { cleanupRedis, sharedRedisUrl, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';
import { Lease } from './lease.js';

/**
 * Once a stopping sidecar has released the delivery lease, a successor may take it and fetch;
 * a fetch of ours still open in Redis must not move a job to active after that point, or the
 * successor delivers the jobs behind that one first. Own file: it patches BullMQ and Lease.
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
