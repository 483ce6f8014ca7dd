import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { closeWithConnection, withTimeout } from '../queue/connection.js';
import type { Lease } from './lease.js';

/**
 * The last step of DeliveryWorker.stop: closes the BullMQ worker and `workerRedis`, its
 * connection, then lets the delivery lease go to a successor, all within `left()` ms.
 * `fetching` is the worker's last fetch, settled or not.
 */
export async function closeAndHandOver(
  worker: Worker,
  workerRedis: Redis,
  fetching: () => Promise<unknown>,
  lease: Lease,
  log: Logger,
  left: () => number,
): Promise<void> {
  // The worker is closed before the lease is let go: a fetch still open in Redis (blocked,
  // or resent by ioredis after a reconnect) could otherwise move a job to active once a
  // successor holds the lease and fetches the jobs behind it, which it would then deliver
  // first. Closing interrupts the fetch and makes it settle; only a connection with no
  // socket (Redis away) may leave it pending, and a connection we closed never reconnects,
  // so what it holds can no longer reach Redis. A last stretch is kept for the release.
  const socketOpen = ['connecting', 'connect', 'ready'].includes(workerRedis.status);
  const fetchDone = withTimeout(
    closeWithConnection(worker, workerRedis, true).then(() => (socketOpen ? fetching() : undefined)),
    Math.max(0, left() - Math.min(1000, left() / 4)),
    'worker close',
  );
  if (await fetchDone.then(() => true, () => false)) {
    await withTimeout(lease.release(), Math.min(1000, left()), 'lease release').catch(() => {});
  } else {
    // Releasing now could hand the queue over while that fetch may still take a job.
    log.warn('a fetch from Redis did not settle in time; leaving the delivery lease to expire');
    lease.forget();
  }
}
