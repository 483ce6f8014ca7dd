import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { Queue } from 'bullmq';
import { FakeVault } from './testing/fake-vault.js';
import {
  cleanupRedis, getJson, postMany, sharedRedisUrl, spawnedSidecarEnv, spawnSidecar, stopChild, uniquePrefix, waitFor,
  type SpawnedSidecar,
} from './testing/helpers.js';

/** The CLI (`npm run sidecar`) as a child process: configuration errors, SIGKILL, SIGTERM. */

function baseEnv(vault: FakeVault, prefix: string): Record<string, string> {
  return spawnedSidecarEnv({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix });
}

async function untilDelivering(url: string): Promise<void> {
  await waitFor(async () => {
    const r = await getJson(`${url}/readyz`);
    return r.status === 200 && r.body.worker === 'delivering';
  }, { timeoutMs: 30_000, message: `sidecar at ${url} delivering` });
}

test('invalid configuration fails at start with a clear message', async (t) => {
  const missing = spawnSidecar({ SIDECAR_BATCH_SIZE: 'lots', SIDECAR_UPSTREAM: 'http://127.0.0.1:1' });
  t.is(await missing.exited, 78);
  t.regex(missing.output(), /invalid sidecar configuration:/);
  t.regex(missing.output(), /SIDECAR_API_KEY is required/);
  t.regex(missing.output(), /SIDECAR_BATCH_SIZE must be a non-negative integer, got "lots"/);
  t.regex(missing.output(), /SIDECAR_ROUTES is required when SIDECAR_UPSTREAM is set/);

  const dir = mkdtempSync(join(tmpdir(), 'sidecar-routes-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const routes = join(dir, 'routes.json');
  writeFileSync(routes, JSON.stringify({ routes: [{ method: 'GET', path: '/x', eventType: 'READ', attributes: {} }] }));
  const badRoutes = spawnSidecar({ SIDECAR_API_KEY: 'k', SIDECAR_UPSTREAM: 'http://127.0.0.1:1', SIDECAR_ROUTES: routes, SIDECAR_PORT: '0', SIDECAR_PROXY_PORT: '0' });
  t.is(await badRoutes.exited, 78);
  t.regex(badRoutes.output(), /invalid routes file .*routes\.json/);
  t.regex(badRoutes.output(), /routes\[0\]\.applicationId is required/);

  const exposed = spawnSidecar({ SIDECAR_API_KEY: 'k', SIDECAR_HOST: '0.0.0.0', SIDECAR_PORT: '0' });
  t.is(await exposed.exited, 78);
  t.regex(exposed.output(), /SIDECAR_HOST is "0.0.0.0", which is not a loopback address: set SIDECAR_INGEST_TOKEN too/);
});

test('SIGKILL mid-batch and restart: nothing lost, nothing recorded twice, order kept', async (t) => {
  const prefix = uniquePrefix('sigkill');
  const vault = new FakeVault();
  await vault.start();
  // The vault records a bulk and answers late: killing the sidecar in between leaves a batch
  // the vault has but the sidecar never heard about.
  vault.answerDelayMs = 300;
  const env = baseEnv(vault, prefix);
  const children: SpawnedSidecar[] = [];
  t.teardown(async () => {
    for (const c of children) await stopChild(c.child);
    await vault.stop();
    await cleanupRedis(prefix);
  });

  const first = spawnSidecar(env);
  children.push(first);
  const { url } = await first.listening;
  await untilDelivering(url);
  const ids = await postMany(url, 20, 50, 0);
  await waitFor(() => vault.records.length >= 200 && vault.inFlight > 0, { message: 'a recorded batch awaiting its answer' });
  first.child.kill('SIGKILL');
  await first.exited;
  const recordedAtKill = vault.records.length;
  t.true(recordedAtKill < ids.length, 'killed before everything was delivered');

  const second = spawnSidecar(env);
  children.push(second);
  const restarted = (await second.listening).url;
  await untilDelivering(restarted);
  ids.push(...(await postMany(restarted, 3, 50, 1000)));
  await waitFor(() => vault.records.length >= ids.length, { timeoutMs: 60_000, message: 'all events recorded after restart' });

  t.deepEqual(vault.recordedIds(), ids, 'every accepted event recorded once, in acceptance order');
  t.true(vault.duplicateDeliveries > 0, 'the unacknowledged batch was resent and answered from the eventId index');
  const queue = new Queue('vault-audit', { connection: { url: sharedRedisUrl }, prefix });
  try {
    await waitFor(async () => (await queue.getActiveCount()) + (await queue.getWaitingCount()) === 0, { message: 'queue drained' });
  } finally {
    await queue.close();
  }
});

test('SIGTERM: stops accepting, finishes the batch in flight, exits 0, logs no values or key', async (t) => {
  const prefix = uniquePrefix('sigterm');
  const vault = new FakeVault({ apiKey: 'very-secret-api-key' });
  await vault.start();
  vault.answerDelayMs = 300;
  const sidecar = spawnSidecar({ ...baseEnv(vault, prefix), SIDECAR_LOG_LEVEL: 'debug' });
  t.teardown(async () => {
    await stopChild(sidecar.child);
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const { url } = await sidecar.listening;
  await untilDelivering(url);
  await postMany(url, 4, 100, 0);
  await waitFor(() => vault.inFlight > 0, { message: 'a batch in flight' });
  sidecar.child.kill('SIGTERM');
  t.is(await sidecar.exited, 0);
  t.is(vault.inFlight, 0);
  t.true(vault.records.length > 0);
  await t.throwsAsync(fetch(`${url}/healthz`), undefined, 'no longer listening');
  const output = sidecar.output();
  t.regex(output, /sidecar stopped/);
  t.false(output.includes('very-secret-api-key'), 'API key never logged');
  t.false(output.includes('@example.test'), 'event values never logged');
});
