import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * Only one process delivers from a queue at a time. That is what keeps the vault's view in
 * queue order, and what lets a process that obtains the lease treat every job still marked
 * active as abandoned by a crashed predecessor and claim it (see DeliveryWorker.recover).
 * Other sidecars on the same queue keep ingesting and wait as standbys.
 */
const acquireScript = `
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 2
end
return 0`;

const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

export type LeaseState = 'held' | 'taken' | 'unknown';

export class Lease {
  readonly token = randomUUID();
  private validUntil = 0;

  constructor(
    private readonly redis: Redis,
    readonly key: string,
    private readonly ttlMs: number,
  ) {}

  /** Whether this process may act as the holder right now, judged by its own clock. */
  get held(): boolean {
    return Date.now() < this.validUntil;
  }

  /**
   * Takes or extends the lease. 'unknown' means Redis could not be asked; the caller keeps
   * acting as holder only while `held` (the last confirmed term) has not run out.
   */
  async refresh(): Promise<LeaseState> {
    const askedAt = Date.now();
    let result: unknown;
    try {
      result = await this.redis.eval(acquireScript, 1, this.key, this.token, this.ttlMs);
    } catch {
      return 'unknown';
    }
    if (result === 1 || result === 2) {
      // Counting from before the call keeps our idea of the term shorter than Redis' one.
      this.validUntil = askedAt + this.ttlMs;
      return 'held';
    }
    this.validUntil = 0;
    return 'taken';
  }

  /** Stops acting as holder without telling Redis: the lease runs out there after ttlMs. */
  forget(): void {
    this.validUntil = 0;
  }

  async release(): Promise<void> {
    this.validUntil = 0;
    await this.redis.eval(releaseScript, 1, this.key, this.token).catch(() => {});
  }
}
