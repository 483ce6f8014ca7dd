import test from 'ava';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { EventsJobData } from '../queue/producer.js';
import { FakeVault } from '../testing/fake-vault.js';
import {
  OwnRedis, capturingLogger, cleanupRedis, makeEvent, postEvents, sharedRedisUrl, startTestSidecar, uniquePrefix, waitFor,
  type LogLine,
} from '../testing/helpers.js';

/**
 * A delivery term (a period as lease holder) ends for one of several reasons, and the log says
 * which, at the level it deserves: an operator reading "lease lost" after a mere Redis
 * reconnect looks for a second sidecar that is not there.
 */

const info = 30;
const warn = 40;

const termEnds = (lines: LogLine[]) => lines.filter((l) => l.component === 'worker' && typeof l.reason === 'string');
const leaseLostLines = (lines: LogLine[]) => lines.filter((l) => /lease lost/.test(l.msg));

test('a reconnect of the worker connection ends the term as a reconnect, at info, not as a lost lease', async (t) => {
  const redis = await OwnRedis.started('sidecar-redis');
  const admin = new Redis(redis.url);
  const vault = new FakeVault();
  await vault.start();
  const { logger, lines } = capturingLogger();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix: uniquePrefix('term-reconnect'), redisUrl: redis.url }, { logger });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    admin.disconnect();
    await redis.dispose();
  });
  await waitFor(() => sidecar.deliveryState === 'delivering', { message: 'delivering' });

  const workerClients = async () => (await admin.client('LIST') as string).split('\n').filter((line) => line.includes('name=vault-sidecar-worker'));
  for (const line of await workerClients()) await admin.client('KILL', 'ID', /\bid=(\d+)/.exec(line)![1]);
  const end = await waitFor(() => termEnds(lines)[0], { message: 'the term ended' });
  t.like(end, { reason: 'redis-reconnected', level: info });
  await waitFor(() => sidecar.deliveryState === 'delivering', { message: 'delivering again' });
  t.deepEqual(leaseLostLines(lines), [], 'nothing says the lease was lost');

  // Still delivering after it.
  const answer = await postEvents(sidecar.url, [makeEvent(1)]);
  await waitFor(() => vault.records.length === 1, { message: 'event recorded' });
  t.deepEqual(vault.recordedIds(), answer.body.accepted.map((a) => a.eventId));
});

test('a lease taken by another process ends the term as a lost lease, at warn', async (t) => {
  const prefix = uniquePrefix('term-lease');
  const vault = new FakeVault();
  await vault.start();
  const { logger, lines } = capturingLogger();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix }, { logger });
  const admin = new Redis(sharedRedisUrl);
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    admin.disconnect();
    await cleanupRedis(prefix);
  });
  await waitFor(() => sidecar.deliveryState === 'delivering', { message: 'delivering' });

  await admin.set(`${prefix}:${sidecar.config.queue}:sidecar-lease`, 'another-process', 'PX', 60_000);
  const end = await waitFor(() => termEnds(lines)[0], { message: 'the term ended' });
  t.like(end, { reason: 'lease-lost', state: 'taken', level: warn });
  await waitFor(() => sidecar.deliveryState === 'standby', { message: 'standing by' });
});

test('a job another process moved to active ends the term as unheld jobs, at warn, naming the job', async (t) => {
  const prefix = uniquePrefix('term-unheld');
  const vault = new FakeVault();
  await vault.start();
  const { logger, lines } = capturingLogger();
  // A batch of 2 keeps the fetch loop idle while a job of 20 waits for the vault, so the
  // other process's fetch takes the next job.
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 2 }, { logger });
  const late = new Worker<EventsJobData>(sidecar.config.queue, null, { connection: { url: sharedRedisUrl, maxRetriesPerRequest: null }, prefix, autorun: false, lockDuration: 60_000 });
  t.teardown(async () => {
    await sidecar.close();
    await late.close(true);
    await vault.stop();
    await cleanupRedis(prefix);
  });
  await waitFor(() => sidecar.deliveryState === 'delivering', { message: 'delivering' });
  await vault.stop();
  await postEvents(sidecar.url, Array.from({ length: 20 }, (_, i) => makeEvent(i)));
  await waitFor(() => lines.some((l) => /vault delivery failed/.test(l.msg)), { message: 'the first job being retried' });
  await postEvents(sidecar.url, [makeEvent(100)]);
  const job = await late.getNextJob('late-token', { block: false });
  t.truthy(job, 'the other process took the second job');

  const end = await waitFor(() => termEnds(lines)[0], { message: 'the term ended' });
  t.like(end, { reason: 'unheld-jobs', jobs: [job!.id], level: warn });
  t.deepEqual(leaseLostLines(lines), [], 'nothing says the lease was lost');
});
