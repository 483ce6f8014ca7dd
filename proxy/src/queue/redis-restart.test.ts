import test from 'ava';
import { FakeVault } from '../testing/fake-vault.js';
import { OwnRedis, getJson, makeEvent, postEvents, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

test('Redis restarted (AOF): nothing accepted is lost, and while it is away ingest answers 503, never 202', async (t) => {
  const redis = await OwnRedis.started('sidecar-redis');
  const vault = new FakeVault();
  await vault.start();
  // Keep the vault away at first so accepted events sit in Redis when it dies.
  await vault.stop();
  const prefix = uniquePrefix('redis-restart');
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, redisUrl: redis.url, batchSize: 50 });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await redis.dispose();
  });

  const accepted: string[] = [];
  for (let r = 0; r < 5; r++) {
    const answer = await postEvents(sidecar.url, Array.from({ length: 20 }, (_, i) => makeEvent(r * 20 + i)));
    t.is(answer.status, 202);
    accepted.push(...answer.body.accepted.map((a) => a.eventId));
  }

  await redis.kill();
  await waitFor(async () => (await getJson(`${sidecar.url}/readyz`)).status === 503, { message: 'not ready without Redis' });
  const statuses: number[] = [];
  for (let i = 0; i < 10; i++) {
    const answer = await postEvents(sidecar.url, [makeEvent(1000 + i)]);
    statuses.push(answer.status);
    t.deepEqual(answer.body.accepted, [], 'nothing reported as accepted');
  }
  t.deepEqual(statuses, Array(10).fill(503));

  await redis.start();
  // Ingest comes back by itself once the connection is re-established.
  const after = await waitFor(async () => {
    const answer = await postEvents(sidecar.url, [makeEvent(2000)]);
    return answer.status === 202 ? answer : undefined;
  }, { message: 'ingest accepting again' });
  accepted.push(after.body.accepted[0].eventId);

  await vault.start();
  await waitFor(() => vault.records.length >= accepted.length, { timeoutMs: 30_000, message: 'every accepted event recorded' });
  t.deepEqual(vault.recordedIds(), accepted, 'all accepted events, once, in order; none of the refused ones');
  t.is((await getJson(`${sidecar.url}/readyz`)).status, 200);
});
