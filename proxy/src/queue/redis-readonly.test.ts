import test from 'ava';
import { Redis } from 'ioredis';
import { FakeVault } from '../testing/fake-vault.js';
import { OwnRedis, closedPort, getJson, makeEvent, postEvents, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

/**
 * A Redis that answers pings but refuses every write: a replica after a failover pointed the
 * sidecar's address at the wrong node (READONLY), or a disk that failed a save (MISCONF). The
 * sidecar cannot take a single event, so it must not tell its load balancer it is ready.
 */
test('a Redis that turned read-only: ingest 503 and not ready, naming why; back to ready once it takes writes, nothing accepted lost', async (t) => {
  const redis = await OwnRedis.started('sidecar-redis-readonly');
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('redis-readonly');
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, redisUrl: redis.url });
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  t.teardown(async () => {
    admin.disconnect();
    await sidecar.close();
    await vault.stop();
    await redis.dispose();
  });
  const first = await postEvents(sidecar.url, [makeEvent(1)]);
  t.is(first.status, 202);
  await waitFor(async () => (await getJson(`${sidecar.url}/readyz`)).body.worker === 'delivering');

  // A replica of a master that cannot be reached: it serves reads (and pings), refuses writes.
  await admin.call('REPLICAOF', '127.0.0.1', String(await closedPort()));
  const refused = await postEvents(sidecar.url, [makeEvent(2)]);
  t.is(refused.status, 503);
  t.deepEqual(refused.body.accepted, []);
  const notReady = await getJson(`${sidecar.url}/readyz`);
  t.is(notReady.status, 503);
  t.like(notReady.body, { status: 'not ready', redis: 'refuses writes (READONLY)' });

  await admin.call('REPLICAOF', 'NO', 'ONE');
  const back = await waitFor(async () => {
    const answer = await postEvents(sidecar.url, [makeEvent(3)]);
    return answer.status === 202 ? answer : undefined;
  }, { message: 'ingest accepting again' });
  const ready = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/readyz`);
    return r.status === 200 ? r.body : undefined;
  }, { message: 'ready again' });
  t.like(ready, { status: 'ready', redis: 'ok' });
  await waitFor(() => vault.records.length >= 2, { timeoutMs: 30_000, message: 'both accepted events recorded' });
  t.deepEqual(vault.recordedIds(), [first.body.accepted[0].eventId, back.body.accepted[0].eventId]);
});
