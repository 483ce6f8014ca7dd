import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { cleanupRedis, metricValue, postEvents, startTestSidecar, uniquePrefix, waitFor } from '../proxy/src/testing/helpers.js';
import { RealVault } from './sidecar-vault.js';

/**
 * Large events, against the real vault: a batch of them is cut to what the vault takes. Cut by
 * event count alone, 500 events of the vault's largest value made a body of some 500 MB, sent
 * whole to be refused (413) and halved, again and again; and past what the vault reads of a
 * refused body (64 MiB, 30 s) or what a string may hold in V8 (512 MiB) the sidecar saw no
 * 413 but a cut connection or an error, which it retried, the same batch, forever.
 */

const apiKey = `e2e-admin-${randomBytes(12).toString('hex')}`;
const EMAIL = `EMAIL_${randomBytes(4).toString('hex')}`;
let vault: RealVault;
let dataDir: string;

test.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sidecar-large-vault-'));
  vault = new RealVault(dataDir, apiKey);
  await vault.start();
  await vault.defineAttribute(EMAIL);
});

test.after.always(async () => {
  await vault?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test('a backlog of events near the vault\'s value limit is sent in bodies the vault takes: never a 413, each recorded once, in order', async (t) => {
  const prefix = uniquePrefix('e2e-large');
  const applicationId = `e2e-large-${randomBytes(4).toString('hex')}`;
  // Values just under the vault's 1 MB for a string, 4 to a request (the sidecar takes 5 MiB),
  // all of them waiting together (a batch of 20 events, or what came in 10 s): 20 MB, over the
  // vault's 16 MiB.
  const sidecar = await startTestSidecar({ apiKey, vaultUrl: vault.url, prefix, batchSize: 20, batchMs: 10_000 });
  t.teardown(async () => {
    await sidecar.close();
    await cleanupRedis(prefix);
  });
  const ids: string[] = [];
  const filler = 'x'.repeat(1_000_000 - 8);
  for (let r = 0; r < 20 / 4; r++) {
    const events = Array.from({ length: Math.min(4, 20 - r * 4) }, (_, i) => ({
      eventType: 'STORE', applicationId, subjectId: `s-${r * 4 + i}`, data: { attribute: EMAIL, value: `${r * 4 + i}-${filler}` },
    }));
    const answer = await postEvents(sidecar.url, events);
    t.is(answer.status, 202, JSON.stringify(answer.body?.rejected));
    ids.push(...answer.body.accepted.map((a) => a.eventId));
  }
  t.is(ids.length, 20);
  // Each handled, or a batch retried: the vault is up and takes every one of these events on its own.
  const handled = async () =>
    (await metricValue(sidecar.url, 'sidecar_events_delivered_total')) + (await metricValue(sidecar.url, 'sidecar_events_dead_lettered_total'));
  await waitFor(
    async () => (await handled()) === 20 || (await metricValue(sidecar.url, 'sidecar_delivery_retries_total')) > 0,
    { timeoutMs: 120_000, intervalMs: 250, message: 'delivery or a retry' },
  );
  t.is(await metricValue(sidecar.url, 'sidecar_delivery_retries_total'), 0, 'no batch was retried');
  t.is(await metricValue(sidecar.url, 'sidecar_events_dead_lettered_total'), 0);
  const metrics = await (await fetch(`${sidecar.url}/metrics`)).text();
  const refusedAsTooLarge = /^sidecar_vault_request_seconds_count\{outcome="too-large"\} (\d+)$/m.exec(metrics)?.[1] ?? '0';
  t.is(refusedAsTooLarge, '0', 'no bulk refused as too large');
  t.deepEqual((await vault.activity(applicationId)).map((r) => r.eventId), ids);
});
