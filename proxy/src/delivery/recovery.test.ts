import test from 'ava';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { StampedEvent } from '../ingest/event.js';
import { jobName, type EventsJobData } from '../queue/producer.js';
import { FakeVault } from '../testing/fake-vault.js';
import { capturingLogger, cleanupRedis, sharedRedisUrl, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

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
  const prefix = uniquePrefix('claim-fails');
  const vault = new FakeVault();
  await vault.start();
  const queue = new Queue<EventsJobData>('vault-audit', { connection: { url: sharedRedisUrl }, prefix });
  const crashed = new Worker<EventsJobData>('vault-audit', null, { connection: { url: sharedRedisUrl, maxRetriesPerRequest: null }, prefix, autorun: false, lockDuration: 60_000 });
  const { logger, lines } = capturingLogger();
  let sidecar: Awaited<ReturnType<typeof startTestSidecar>> | undefined;
  t.teardown(async () => {
    await sidecar?.close();
    await crashed.close(true);
    await queue.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });

  const stamped = (i: number): StampedEvent => ({ eventType: 'READ', applicationId: 'a', dataPointId: 'd', eventId: `ev-${i}`, timestamp: '2024-01-01T00:00:00Z' });
  const all: string[] = [];
  for (let j = 0; j < 4; j++) {
    const events = [0, 1].map((k) => stamped(j * 2 + k));
    all.push(...events.map((e) => e.eventId));
    await queue.add(jobName, { events }, { removeOnComplete: true });
  }
  // A crashed process left the two oldest jobs active under locks valid for a minute.
  for (let j = 0; j < 2; j++) t.truthy(await crashed.getNextJob(`dead-token-${j}`, { block: false }));

  // The first claim of the recovery fails; its job keeps the crashed process's lock.
  failingClaims.set(prefix, 1);
  // A long lock keeps heartbeats (and their search for jobs nobody holds) out of the way.
  sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 4, lockMs: 60_000 }, { logger });
  await waitFor(async () => (await queue.getActiveCount()) === 0 && (await queue.getWaitingCount()) === 0, { timeoutMs: 10_000, message: 'queue drained' });
  t.deepEqual(vault.recordedIds(), all, 'every event, in order');
  t.is(vault.duplicateDeliveries, 0, 'nothing sent twice');
  t.like(lines.find((l) => l.reason === 'recovery-failed'), { level: 40, msg: 'could not recover abandoned jobs; retrying' });
  t.regex(String(lines.find((l) => l.reason === 'recovery-failed')?.err), /injected claim failure/);
});
