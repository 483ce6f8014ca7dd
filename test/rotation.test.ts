/**
 * Key rotation as an operator runs it, while the vault keeps serving: register the new
 * key, rewrap, move clients over, retire the old key.
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair } from '../core/src/crypto/keys.js';
import { callVault, runVaultCli, spawnVault } from '../core/src/testing/process.js';

const cli = runVaultCli;
const call = callVault;

test('rotation end to end: no read fails at any step for a client holding the key it was told to use', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-rotation-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const vault = await spawnVault({ dataDir: join(dir, 'data') });
  t.teardown(() => vault.dispose());
  const oldPair = vault.keys;
  const newPair = generateKeyPair(2048);
  writeFileSync(join(dir, 'new-public.pem'), newPair.publicPem);
  writeFileSync(join(dir, 'old-private.pem'), oldPair.privatePem, { mode: 0o600 });

  await call(vault, 'POST', '/attributes', { key: 'PHONE', schema: 'string', repeatable: true });
  const storeAs = (subject: string, value: string, pair = oldPair) =>
    call(vault, 'POST', `/datasubjects/${subject}/attributes`, { data: [{ attribute: 'PHONE', value }] }, { 'x-encryption-key': pair.publicKey });
  const phones = async (subject: string, pair: typeof oldPair) => {
    const res = await call(vault, 'GET', `/datasubjects/${subject}/attributes/PHONE`, undefined, { 'x-decryption-key': pair.privateKey });
    return res.status === 200 ? res.body.data.map((p: { value: string }) => p.value).sort() : res.body.message;
  };
  for (let i = 0; i < 5; i++) t.is((await storeAs(`s${i}`, `old ${i}`)).status, 200);

  // 1. The new key becomes active; the running vault picks it up without a restart.
  t.regex(cli(['keys', 'register', '--public-key', join(dir, 'new-public.pem')], vault.env), /as the active key/);
  await new Promise((r) => setTimeout(r, 1100));
  t.is((await storeAs('s0', 'stored after register', oldPair)).status, 200, 'clients still sending the old public key can store');
  t.deepEqual(await phones('s0', oldPair), ['old 0', 'stored after register'], 'the old pair reads old and new data');

  // 2. Rewrap while serving: now both pairs read everything.
  t.regex(cli(['keys', 'rewrap', '--old-private-key', join(dir, 'old-private.pem')], vault.env), /Re-wrapped \d+ data keys/);
  for (let i = 0; i < 5; i++) t.deepEqual(await phones(`s${i}`, newPair), await phones(`s${i}`, oldPair));
  t.deepEqual(await phones('s0', newPair), ['old 0', 'stored after register']);

  // 3. Clients move to the new pair; then the old key is retired.
  const oldId = cli(['keys', 'list'], vault.env).split('\n').find((l) => l.endsWith('\tretired'))!.split('\t')[0];
  t.regex(cli(['keys', 'retire', '--key-id', oldId], vault.env), /Retired/);
  for (let i = 0; i < 5; i++) t.true((await phones(`s${i}`, newPair)).includes(`old ${i}`));
  t.is(await phones('s1', oldPair), 'Encoded key provided is invalid', 'the retired key opens nothing');
  // The running vault had the old key in memory from the stores above; retired by another
  // process, it stops taking stores within a second, without a restart.
  await new Promise((r) => setTimeout(r, 1100));
  const stale = await storeAs('s8', 'under the retired key', oldPair);
  t.is(stale.status, 400);
  t.is(stale.body.message, 'Encoded key provided is invalid');
  t.is((await storeAs('s9', 'after retire', newPair)).status, 200);
  t.deepEqual(await phones('s9', newPair), ['after retire']);
  t.deepEqual(cli(['keys', 'list'], vault.env).trim().split('\n').map((l) => l.split('\t')[1]), ['active']);
});
