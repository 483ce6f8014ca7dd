/**
 * The sidecar cut off from Redis by a partition: nothing is refused or closed, so the
 * sidecar learns of it only by its enqueue timeout, and answers 503. A partition short enough
 * for TCP to ride out would then deliver the held-back enqueues late, turning events whose
 * callers were told "not accepted" (and who send them again) into recorded ones.
 */
import test from 'ava';
import { startRelay } from '../core/src/testing/relay.js';
import { FakeVault } from '../proxy/src/testing/fake-vault.js';
import { cleanupRedis, makeEvent, postEvents, startTestSidecar, uniquePrefix, waitFor } from '../proxy/src/testing/helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('events refused during a Redis partition are never recorded once it ends', async (t) => {
  const prefix = uniquePrefix('redis-partition');
  const vault = new FakeVault();
  await vault.start();
  const relay = await startRelay(6379);
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, redisUrl: `redis://127.0.0.1:${relay.port}`, enqueueTimeoutMs: 300 });
  t.teardown(async () => {
    await sidecar.close();
    await relay.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const before = await postEvents(sidecar.url, [makeEvent(1)]);
  t.is(before.status, 202);
  await waitFor(() => vault.records.length === 1, { message: 'the first event delivered' });

  relay.partition();
  const refused: string[] = [];
  for (let i = 0; i < 3; i++) {
    const answer = await postEvents(sidecar.url, [makeEvent(100 + i)]);
    t.is(answer.status, 503);
    t.deepEqual(answer.body.accepted, []);
    refused.push(`subject-${100 + i}`);
  }
  // A short partition that TCP rides out: what the sidecar left queued would arrive once it ends.
  await sleep(100);
  relay.resume();

  const after = await waitFor(
    async () => {
      const answer = await postEvents(sidecar.url, [makeEvent(2)]);
      return answer.status === 202 ? answer : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 200, message: 'accepting again' },
  );
  await waitFor(() => vault.records.some((r) => r.eventId === after.body.accepted[0].eventId), { message: 'the event after the partition delivered' });
  await sleep(1000);
  t.deepEqual(
    vault.records.filter((r) => refused.includes(r.subjectId as string)),
    [],
    'no refused event recorded',
  );
});
