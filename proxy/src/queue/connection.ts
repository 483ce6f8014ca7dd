import { Redis, type RedisOptions } from 'ioredis';

/**
 * Three kinds of Redis connection, because they need opposite failure behaviour:
 *
 * - `producer`: ingest must answer 503 at once when Redis is away, and a command we gave up
 *   on must never run later (it would enqueue events the caller was told were refused). So no
 *   offline queue and no resending of unanswered commands after a reconnect.
 * - `worker`: delivery may simply wait for Redis to come back; BullMQ's blocking fetch needs
 *   `maxRetriesPerRequest: null`.
 * - `control`: lease and lock bookkeeping wants fast failures it can retry on its own schedule.
 *
 * ioredis' default reconnect delay grows to 20 s under BullMQ; capping it at 2 s makes the
 * sidecar notice a restarted Redis quickly.
 */
export type ConnectionKind = 'producer' | 'worker' | 'control';

export function retryStrategy(times: number): number {
  return Math.min(50 * 2 ** Math.min(times, 10), 2000);
}

export function redisOptions(kind: ConnectionKind): RedisOptions {
  const common: RedisOptions = { retryStrategy, connectionName: `vault-sidecar-${kind}` };
  switch (kind) {
    case 'producer':
      return { ...common, enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 };
    case 'worker':
      return { ...common, maxRetriesPerRequest: null };
    case 'control':
      return { ...common, enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 };
  }
}

export function connect(url: string, kind: ConnectionKind): Redis {
  const client = new Redis(url, redisOptions(kind));
  // Connection errors are expected while Redis restarts; readiness and metrics report them.
  client.on('error', () => {});
  return client;
}

export class TimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TimeoutError';
  }
}

/** Resolves with the value, or rejects with a TimeoutError after `ms` without cancelling the underlying work. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Closes a BullMQ Queue or Worker built on a connection we created, and that connection.
 * BullMQ drops its event listeners on close; if its setup is still waiting for Redis at that
 * point, the setup's eventual failure is emitted to nobody and surfaces as an unhandled
 * rejection. Ending the connection first makes the setup settle while BullMQ still listens.
 */
export async function closeWithConnection(
  target: { readonly client: Promise<unknown>; close(force?: boolean): Promise<void> },
  redis: Redis,
  force = false,
): Promise<void> {
  redis.disconnect();
  await withTimeout(
    target.client.then(
      () => {},
      () => {},
    ),
    2000,
    'BullMQ setup',
  ).catch(() => {});
  await target.close(force).catch(() => {});
}

/**
 * Drops a connection whose commands may sit unsent: in a partition the kernel keeps them and
 * sends them once the network returns, and a plain close would too (it sends what is queued,
 * then its FIN). A reset discards them. ioredis then connects anew.
 */
export function resetConnection(redis: Redis): void {
  const stream = redis.stream as (NodeJS.ReadableStream & { resetAndDestroy?: () => void; destroy(): void }) | undefined;
  if (!stream) return;
  try {
    stream.resetAndDestroy!();
  } catch {
    // Not a TCP socket (TLS wraps one); destroying it still stops ioredis from resending.
    stream.destroy();
  }
}
