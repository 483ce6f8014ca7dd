import test from 'ava';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { EventsJobData } from './producer.js';
import { FakeVault } from '../testing/fake-vault.js';
import {
  OwnRedis, cleanupRedis, makeEvent, postEvents, sharedRedisUrl, startTestSidecar, uniquePrefix, waitFor,
} from '../testing/helpers.js';

/**
 * A fetch that moves a job to active after the delivery term that started it has ended, so
 * that nobody holds the job. BullMQ's fetch first blocks (BZPOPMIN) on a connection of its own;
 * after a Redis restart ioredis resends that command once this connection is back, which may
 * be after the worker's main connection came back and a new term claimed what was active, and
 * only then does the fetch move the next job to active. A process that lost the lease can
 * fetch late in the same way.
 */

// Fetches of the listed prefixes wait for their gate before reaching BullMQ: a fetch that
// reaches Redis only after its term ended.
const gates = new Map<string, Promise<void>>();
const gated = new Map<string, 'waiting' | 'fetching' | 'settled'>();
const originalGetNextJob = Worker.prototype.getNextJob;
Worker.prototype.getNextJob = async function (this: Worker, ...args: Parameters<Worker['getNextJob']>) {
  const prefix = this.opts.prefix ?? '';
  const gate = gates.get(prefix);
  if (!gate) return originalGetNextJob.apply(this, args);
  gates.delete(prefix);
  gated.set(prefix, 'waiting');
  await gate;
  gated.set(prefix, 'fetching');
  try {
    return await originalGetNextJob.apply(this, args);
  } finally {
    gated.set(prefix, 'settled');
  }
};

async function postOne(url: string, events: ReturnType<typeof makeEvent>[]): Promise<string[]> {
  const answer = await postEvents(url, events);
  if (answer.status !== 202) throw new Error(`ingest answered ${answer.status}`);
  return answer.body.accepted.map((a) => a.eventId);
}

test('a fetch of an ended term that reaches Redis late: the next term waits for it, then claims its job, in order', async (t) => {
  const redis = await OwnRedis.started('sidecar-redis');
  const admin = new Redis(redis.url);
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('late-fetch');
  // A batch of 2 keeps the fetch loop idle while a job of 20 waits for the vault, so only the
  // late fetch can take the next job. A long lock keeps heartbeats (and their search for jobs
  // nobody holds) out of the way: this is about the term that follows the late fetch's own.
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, redisUrl: redis.url, batchSize: 2, lockMs: 60_000 });
  let release = () => {};
  t.teardown(async () => {
    release();
    await sidecar.close();
    await vault.stop();
    admin.disconnect();
    await redis.dispose();
  });

  const accepted = await postOne(sidecar.url, [makeEvent(0)]);
  await waitFor(() => vault.records.length === 1, { message: 'first event recorded' });
  // An idle fetch gives up after BullMQ's drain delay and the loop starts the next one, which
  // the gate holds.
  gates.set(prefix, new Promise<void>((resolve) => (release = resolve)));
  await waitFor(() => gated.get(prefix) === 'waiting', { message: 'a fetch held at its gate' });

  await vault.stop();
  accepted.push(...(await postOne(sidecar.url, Array.from({ length: 20 }, (_, i) => makeEvent(100 + i)))));
  accepted.push(...(await postOne(sidecar.url, [makeEvent(200)])));

  // Cutting the worker's connection ends the term (see DeliveryWorker); the gated fetch
  // belongs to it.
  const workerClients = async () => (await admin.client('LIST') as string).split('\n').filter((line) => line.includes('name=vault-sidecar-worker'));
  for (const line of await workerClients()) await admin.client('KILL', 'ID', /\bid=(\d+)/.exec(line)![1]);
  await waitFor(async () => (await workerClients()).length === 1, { message: 'worker connection back' });
  // Time for the next term to claim what is active and, unless it waits for the late fetch,
  // to fetch the third job itself.
  await new Promise((resolve) => setTimeout(resolve, 500));
  release();
  await waitFor(() => gated.get(prefix) === 'settled', { message: 'the late fetch settled' });

  await vault.start();
  accepted.push(...(await postOne(sidecar.url, [makeEvent(300)])));
  await waitFor(() => vault.records.length >= accepted.length, { timeoutMs: 10_000, message: 'every accepted event recorded' });
  t.deepEqual(vault.recordedIds(), accepted, 'all accepted events, once, in order');
  await waitFor(async () => (await admin.llen(`${prefix}:${sidecar.config.queue}:active`)) === 0, { message: 'no job left active' });
});

test('a job another process moved to active after losing the lease is claimed and delivered', async (t) => {
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('foreign-fetch');
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 2 });
  const queue = new Queue<EventsJobData>(sidecar.config.queue, { connection: { url: sharedRedisUrl }, prefix });
  const late = new Worker<EventsJobData>(sidecar.config.queue, null, { connection: { url: sharedRedisUrl, maxRetriesPerRequest: null }, prefix, autorun: false, lockDuration: 60_000 });
  t.teardown(async () => {
    await sidecar.close();
    await late.close(true);
    await queue.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });

  const accepted = await postOne(sidecar.url, [makeEvent(0)]);
  await waitFor(() => vault.records.length === 1, { message: 'first event recorded' });
  await vault.stop();
  accepted.push(...(await postOne(sidecar.url, Array.from({ length: 20 }, (_, i) => makeEvent(100 + i)))));
  // Held by the sidecar, whose fetch loop then waits for the vault to take its events.
  await waitFor(async () => (await queue.getActiveCount()) === 1, { message: 'second job active' });
  accepted.push(...(await postOne(sidecar.url, [makeEvent(200)])));
  t.truthy(await late.getNextJob('late-token', { block: false }), 'the late fetch took the third job');

  await vault.start();
  await waitFor(() => vault.records.length >= accepted.length, { timeoutMs: 10_000, message: 'every accepted event recorded' });
  t.deepEqual(vault.recordedIds(), accepted);
  await waitFor(async () => (await queue.getActiveCount()) === 0, { message: 'no job left active' });
});
