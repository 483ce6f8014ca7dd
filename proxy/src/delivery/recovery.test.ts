import test from 'ava';
import { Redis } from 'ioredis';
import { capturingLogger, queueLeftByCrashedWorker, waitFor } from '../testing/helpers.js';

/**
 * Claiming jobs a previous holder abandoned. Own file: it patches ioredis so that, for the
 * prefixes listed, the next claims fail in Redis (a script error for that one command, the
 * rest of the pipeline running normally), as a claim refused by Redis would.
 */

const failingClaims = new Map<string, number>();
const claimMarker = "redis.call('EXISTS', KEYS[1])";
type Pipeline = ReturnType<Redis['pipeline']>;
const originalPipeline = Redis.prototype.pipeline;
Redis.prototype.pipeline = function (this: Redis, ...args: Parameters<Redis['pipeline']>): Pipeline {
  const pipeline = originalPipeline.apply(this, args);
  const originalEval = pipeline.eval.bind(pipeline) as (...a: unknown[]) => Pipeline;
  (pipeline as unknown as { eval: (...a: unknown[]) => Pipeline }).eval = (...a: unknown[]) => {
    const [script, , jobKey] = a;
    const prefix = [...failingClaims.keys()].find((p) => typeof jobKey === 'string' && jobKey.startsWith(`${p}:`));
    if (prefix && typeof script === 'string' && script.includes(claimMarker) && failingClaims.get(prefix)! > 0) {
      failingClaims.set(prefix, failingClaims.get(prefix)! - 1);
      return originalEval("return redis.error_reply('injected claim failure')", 0);
    }
    return originalEval(...a);
  };
  return pipeline;
};

test('a claim that fails in Redis is not taken as claimed: recovery retries, and delivers every job once, in order', async (t) => {
  const { prefix, vault, queue, all, startSidecar } = await queueLeftByCrashedWorker(t, 'claim-fails', { jobs: 4, eventsPerJob: 2, taken: 2 });
  const { logger, lines } = capturingLogger();

  // The first claim of the recovery fails; its job keeps the crashed process's lock.
  failingClaims.set(prefix, 1);
  // A long lock keeps heartbeats (and their search for jobs nobody holds) out of the way.
  await startSidecar({ batchSize: 4, lockMs: 60_000 }, { logger });
  await waitFor(async () => (await queue.getActiveCount()) === 0 && (await queue.getWaitingCount()) === 0, { timeoutMs: 10_000, message: 'queue drained' });
  t.deepEqual(vault.recordedIds(), all, 'every event, in order');
  t.is(vault.duplicateDeliveries, 0, 'nothing sent twice');
  t.like(lines.find((l) => l.reason === 'recovery-failed'), { level: 40, msg: 'could not recover abandoned jobs; retrying' });
  t.regex(String(lines.find((l) => l.reason === 'recovery-failed')?.err), /injected claim failure/);
});
