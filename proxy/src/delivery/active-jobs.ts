import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';

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
 * The queue's active jobs and their locks, as the lease holder sees them: the jobs it claims
 * when a term begins (abandoned by a previous holder, see DeliveryWorker.recover) and those it
 * looks for on heartbeats (active under nobody's lock, see DeliveryWorker.reclaimUnheld).
 */
export class ActiveJobs {
  constructor(
    private readonly control: Redis,
    private readonly worker: Worker,
    private readonly lockMs: number,
  ) {}

  ids(): Promise<string[]> {
    return this.control.lrange(this.worker.keys.active, 0, -1);
  }

  /**
   * Sets our locks on the jobs. A pipeline resolves even when some of its commands failed; a
   * job whose claim failed is not ours (its old lock stands, and our completion would be
   * refused), so any failure throws.
   */
  async claim(jobs: { id: string; token: string }[]): Promise<void> {
    const pipeline = this.control.pipeline();
    for (const h of jobs) pipeline.eval(claimScript, 2, this.worker.toKey(h.id), `${this.worker.toKey(h.id)}:lock`, h.token, this.lockMs);
    const results = await pipeline.exec();
    if (!results) throw new Error('job claims were discarded');
    const failed = results.findIndex(([err]) => err);
    if (failed >= 0) throw new Error(`cannot claim job ${jobs[failed].id}: ${results[failed][0]!.message}`);
  }

  /** Those of the candidates active under a lock whose token does not start with `tokenPrefix`. */
  async unheld(candidates: string[], tokenPrefix: string): Promise<string[]> {
    const keys = [this.worker.keys.active, ...candidates.flatMap((id) => [this.worker.toKey(id), `${this.worker.toKey(id)}:lock`])];
    return (await this.control.eval(unheldScript, keys.length, ...keys, tokenPrefix, ...candidates)) as string[];
  }
}

/** Oldest first: BullMQ's ids are increasing integers, unless a job was given its own id. */
export function byJobId(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  if (Number.isSafeInteger(na) && Number.isSafeInteger(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}
