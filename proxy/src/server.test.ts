import test from 'ava';
import { FakeVault } from './testing/fake-vault.js';
import { cleanupRedis, freePort, getJson, makeEvent, postEvents, startTestSidecar, uniquePrefix, waitFor } from './testing/helpers.js';

test('healthz, readyz and Prometheus metrics', async (t) => {
  const prefix = uniquePrefix('server');
  const vault = new FakeVault();
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  t.deepEqual((await getJson(`${sidecar.url}/healthz`)).body, { status: 'ok' });
  const ready = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/readyz`);
    return r.status === 200 && r.body.worker === 'delivering' ? r.body : undefined;
  });
  t.deepEqual(ready, { status: 'ready', redis: 'ok', worker: 'delivering' });

  await postEvents(sidecar.url, [makeEvent(1), makeEvent(2), { eventType: 'READ' }]);
  await waitFor(() => vault.records.length === 2);
  const res = await fetch(`${sidecar.url}/metrics`);
  t.regex(res.headers.get('content-type')!, /text\/plain/);
  const text = await res.text();
  for (const line of [
    /^sidecar_events_accepted_total\{source="api"\} 2$/m,
    /^sidecar_events_rejected_total\{source="api"\} 1$/m,
    /^sidecar_events_delivered_total 2$/m,
    /^sidecar_queue_jobs\{state="waiting"\} 0$/m,
    /^sidecar_dead_letters 0$/m,
    /^sidecar_batch_latency_seconds_count 1$/m,
    /^# TYPE sidecar_delivery_retries_total counter$/m,
    /^# TYPE sidecar_events_dead_lettered_total counter$/m,
    /^sidecar_vault_request_seconds_bucket\{le="0.005",outcome="ok"\}/m,
    /^sidecar_process_cpu_user_seconds_total/m,
  ]) {
    t.regex(text, line);
  }
});

test('not ready while Redis is unreachable, but alive', async (t) => {
  const sidecar = await startTestSidecar({ apiKey: 'k', prefix: uniquePrefix('server-down'), redisUrl: `redis://127.0.0.1:${await freePort()}`, enqueueTimeoutMs: 100 });
  t.teardown(() => sidecar.close());
  t.is((await getJson(`${sidecar.url}/healthz`)).status, 200);
  const ready = await getJson(`${sidecar.url}/readyz`);
  t.is(ready.status, 503);
  t.like(ready.body, { status: 'not ready', redis: 'unreachable' });
  t.is((await fetch(`${sidecar.url}/metrics`)).status, 200, 'metrics still answer');
  t.is((await getJson(`${sidecar.url}/deadletters`)).status, 503);
});
