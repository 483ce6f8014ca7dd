/**
 * Issue 13's first guarantee: an answer means its activity record is committed. Reads and
 * stores run concurrently against a vault process that is SIGKILLed mid-stream; after a
 * restart every answered request is in `GET /activity`, and the chain verifies.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { callVault, spawnVault, type VaultProcess } from '../core/src/testing/process.js';

const ATTRIBUTE = `DURABLE_${randomBytes(4).toString('hex').toUpperCase()}`;

async function allActivity(v: VaultProcess, subjectPrefix: string) {
  const records: any[] = [];
  for (let page = 0; ; page++) {
    const res = await callVault(v, 'GET', `/activity?attribute=${ATTRIBUTE}&count=1000&page=${page}`);
    if (res.status !== 200) throw new Error(`GET /activity: ${res.status} ${JSON.stringify(res.body)}`);
    records.push(...res.body.data.filter((r: any) => String(r.subjectId).startsWith(subjectPrefix)));
    if (res.body.data.length < 1000) return records;
  }
}

test('every request answered before a SIGKILL is in the activity log after the restart', async (t) => {
  t.timeout(240_000);
  let vault = await spawnVault();
  t.teardown(() => vault.dispose());
  const defined = await callVault(vault, 'POST', '/attributes', { key: ATTRIBUTE, schema: 'string', repeatable: true });
  t.is(defined.status, 201, JSON.stringify(defined.body));

  const prefix = `durable-${randomBytes(3).toString('hex')}`;
  const storeHeaders = { 'x-encryption-key': vault.keys.publicKey };
  const readHeaders = { 'x-decryption-key': vault.keys.privateKey };
  // Points to read while the stores run.
  const seeded: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await callVault(vault, 'POST', `/entities/${prefix}-seed-${i}/attributes`, { data: [{ attribute: ATTRIBUTE, value: `seed ${i}` }] }, storeHeaders);
    t.is(res.status, 200, JSON.stringify(res.body));
    seeded.push(res.body.data[0].dataPointId);
  }

  const answeredStores: string[] = [];
  const answeredReads = new Map<string, number>();
  let killed = false;
  const worker = async (w: number) => {
    for (let i = 0; !killed; i++) {
      try {
        if (i % 2 === 0) {
          const res = await callVault(vault, 'POST', `/entities/${prefix}-w${w}/attributes`, { data: [{ attribute: ATTRIBUTE, value: `value ${w}.${i}` }] }, storeHeaders);
          if (res.status === 200) answeredStores.push(res.body.data[0].dataPointId);
        } else {
          const id = seeded[(w * 7 + i) % seeded.length];
          const res = await callVault(vault, 'GET', `/data/${id}`, undefined, readHeaders);
          if (res.status === 200) answeredReads.set(id, (answeredReads.get(id) ?? 0) + 1);
        }
      } catch {
        // The connection died with the process: this request was never answered.
      }
    }
  };
  const workers = Array.from({ length: 16 }, (_, w) => worker(w));
  const deadline = Date.now() + 60_000;
  while (answeredStores.length + [...answeredReads.values()].reduce((a, b) => a + b, 0) < 400 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  // Mid-stream: requests are in flight on all 16 connections.
  await vault.stop('SIGKILL');
  killed = true;
  await Promise.all(workers);
  t.true(answeredStores.length > 50, `only ${answeredStores.length} stores answered before the kill`);

  vault = await vault.restart();
  const records = await allActivity(vault, prefix);
  const stored = new Set(records.filter((r) => r.eventType === 'STORE').map((r) => r.dataPointId));
  const missingStores = answeredStores.filter((id) => !stored.has(id));
  t.deepEqual(missingStores, [], 'every answered store has its STORE record');
  const reads = new Map<string, number>();
  for (const r of records) if (r.eventType === 'READ') reads.set(r.dataPointId, (reads.get(r.dataPointId) ?? 0) + 1);
  for (const [id, n] of answeredReads) t.true((reads.get(id) ?? 0) >= n, `${id}: ${n} reads answered, ${reads.get(id) ?? 0} recorded`);
  t.log(`${answeredStores.length} stores and ${[...answeredReads.values()].reduce((a, b) => a + b, 0)} reads answered before the kill; all recorded`);

  // The log survived whole: after the sealer caught up, the chain covers everything.
  const verify = await callVault(vault, 'GET', '/activity/verify');
  t.is(verify.status, 200);
  t.true(verify.body.data.valid, JSON.stringify(verify.body));
  t.is(verify.body.data.unsealed, 0);
});
