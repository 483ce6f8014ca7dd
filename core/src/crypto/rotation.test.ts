/**
 * Key rotation in the activity log: each step an operator takes (register, each batch of a
 * rewrap as it commits, retire), and a new key named by the environment at a restart, is a
 * `CHANGE` record naming who took it; the vault's first key, its set-up, is not. A vault of
 * its own: these tests change its keys.
 */
import test from 'ava';
import { sql } from 'kysely';
import { createPublicKey } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { Vault } from '../vault.js';
import { createLogger } from '../logger.js';
import { defineAttribute, unique } from '../audit/fixtures.js';
import { generateKeyPair, keyFingerprint, type Keyring } from './keys.js';
import { KeyRotation } from './rotation.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const operator = { applicationId: 'vault-cli', applicationUser: 'operator' };

async function keyChanges(): Promise<any[]> {
  await v.vault.sealer.sealAll();
  const res = await v.request('GET', '/activity', { query: { eventType: 'CHANGE', count: '1000' } });
  return res.body.data.filter((e: any) => e.change.target === 'encryptionKey');
}

test.serial('a fresh vault’s own key is its set-up, not a change', async (t) => {
  t.deepEqual(await keyChanges(), []);
});

test.serial('register, rewrap and retire are each recorded as the operator’s, in order, and never with a key', async (t) => {
  const attribute = unique('ATTR').toUpperCase();
  await defineAttribute(v, attribute);
  for (const subject of [unique('s'), unique('s')]) {
    const stored = await v.request('POST', `/datasubjects/${subject}/attributes`, { body: { data: [{ attribute, value: 'x' }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
    t.is(stored.status, 200);
  }
  const oldId = keyFingerprint(createPublicKey(v.keys.publicPem));
  const next = generateKeyPair(2048);
  const newId = (await v.vault.keyRotation.register(createPublicKey(next.publicPem), operator)).id;
  // Registered again as it already is: nothing changed, nothing recorded.
  await v.vault.keyRotation.register(createPublicKey(next.publicPem), operator);
  // In batches of one: each batch is recorded as it commits.
  const rewrapped = await v.vault.keyRotation.rewrap(v.keys.privateKey, operator, { batchSize: 1 });
  t.is(rewrapped, 2);
  const moved = await v.vault.keyRotation.retire(oldId, operator);
  t.is(moved, 2);

  const recorded = await keyChanges();
  t.deepEqual(
    recorded.map((e) => e.change),
    [
      { target: 'encryptionKey', id: oldId, action: 'update', fields: { status: 'retired' } },
      { target: 'encryptionKey', id: newId, action: 'create', fields: { status: 'active' } },
      { target: 'encryptionKey', id: oldId, action: 'rewrap', fields: { onto: newId, dataKeys: 1 } },
      { target: 'encryptionKey', id: oldId, action: 'rewrap', fields: { onto: newId, dataKeys: 1 } },
      { target: 'encryptionKey', id: oldId, action: 'delete', fields: { onto: newId, dataKeys: 2 } },
    ],
  );
  for (const entry of recorded) t.like(entry, { applicationId: 'vault-cli', applicationUser: 'operator', sealed: true });
  const everything = JSON.stringify(await v.vault.db.selectFrom('activity_log').selectAll().execute());
  for (const secret of [v.keys.privateKey, v.keys.publicKey, next.privateKey, next.publicKey, 'BEGIN']) t.false(everything.includes(secret));
  t.like((await v.request('GET', '/activity/verify')).body.data, { valid: true });

  // A refused step records nothing.
  await t.throwsAsync(() => v.vault.keyRotation.retire(newId, operator), { message: 'the active key cannot be retired: register its successor first' });
  await t.throwsAsync(() => v.vault.keyRotation.rewrap(next.privateKey, operator), { message: /^--old-private-key is the active key's own/ });
  t.is((await keyChanges()).length, 5);
});

test.serial('a restart naming a new VAULT_ENCRYPTION_PUBLIC_KEY is a rotation, recorded as the vault’s start', async (t) => {
  const before = (await keyChanges()).length;
  const next = generateKeyPair(2048);
  // A second process on the same database, started with the new key in its environment.
  const restarted = await Vault.open({ config: { ...v.config, encryptionPublicKey: next.publicKey }, logger: createLogger('warn') });
  await restarted.close();
  const recorded = (await keyChanges()).slice(before);
  t.deepEqual(
    recorded.map((e) => [e.applicationId, e.change.action, e.change.id, e.change.fields]),
    [
      ['vault-start', 'update', (await v.vault.keyring.list()).find((k) => k.status === 'retired')!.id, { status: 'retired' }],
      ['vault-start', 'create', keyFingerprint(createPublicKey(next.publicPem)), { status: 'active' }],
    ],
  );
  // Started again with the same setting: the key is known, nothing is recorded.
  const again = await Vault.open({ config: { ...v.config, encryptionPublicKey: next.publicKey }, logger: createLogger('warn') });
  await again.close();
  t.is((await keyChanges()).length, before + 2);
});

test('a rewrap interrupted after its first batch leaves that batch and its record, and no copy without one', async (t) => {
  const w = await startTestVault();
  t.teardown(() => w.close());
  const attribute = unique('ATTR').toUpperCase();
  await defineAttribute(w, attribute);
  for (let i = 0; i < 5; i++) {
    const stored = await w.request('POST', `/datasubjects/${unique('s')}/attributes`, { body: { data: [{ attribute, value: 'x' }] }, headers: { 'x-encryption-key': w.keys.publicKey } });
    t.is(stored.status, 200);
  }
  const oldId = keyFingerprint(createPublicKey(w.keys.publicPem));
  const next = generateKeyPair(2048);
  const newId = (await w.vault.keyRotation.register(createPublicKey(next.publicPem), operator)).id;

  // The process dies while unwrapping the second batch's first data key: the first batch of
  // two has committed, the second has not begun to write.
  let unwraps = 0;
  const dying = Object.create(w.vault.keyring) as Keyring;
  dying.requireDecryptionKey = async (header) => {
    const credential = await w.vault.keyring.requireDecryptionKey(header);
    return {
      registered: credential.registered,
      privateKey: () => {
        if (++unwraps > 2) throw new Error('killed');
        return credential.privateKey();
      },
    };
  };
  const interrupted = new KeyRotation(w.vault.db, dying, w.vault.datapoints.dataKeys, w.vault.activity);
  await t.throwsAsync(() => interrupted.rewrap(w.keys.privateKey, operator, { batchSize: 2 }), { message: 'killed' });

  const copies = async () => Number((await w.vault.db.selectFrom('subject_key_wraps').select((eb) => eb.fn.countAll().as('n')).where('encryption_key_id', '=', newId).executeTakeFirstOrThrow()).n);
  const rewraps = async () => {
    await w.vault.sealer.sealAll();
    const res = await w.request('GET', '/activity', { query: { eventType: 'CHANGE', count: '1000' } });
    return res.body.data.filter((e: any) => e.change.action === 'rewrap').map((e: any) => e.change);
  };
  t.is(await copies(), 2);
  t.deepEqual(await rewraps(), [{ target: 'encryptionKey', id: oldId, action: 'rewrap', fields: { onto: newId, dataKeys: 2 } }]);

  // Run again, it goes on with the rest, recorded as its own batch.
  t.is(await w.vault.keyRotation.rewrap(w.keys.privateKey, operator), 3);
  t.is(await copies(), 5);
  t.deepEqual(
    (await rewraps()).map((c: any) => c.fields),
    [
      { onto: newId, dataKeys: 2 },
      { onto: newId, dataKeys: 3 },
    ],
  );
  t.like((await w.request('GET', '/activity/verify')).body.data, { valid: true });
});

test('a purge racing a rewrap batch leaves no copy of the purged subject’s data key', async (t) => {
  const w = await startTestVault();
  t.teardown(() => w.close());
  const attribute = unique('ATTR').toUpperCase();
  await defineAttribute(w, attribute);
  const subject = unique('s');
  const stored = await w.request('POST', `/datasubjects/${subject}/attributes`, { body: { data: [{ attribute, value: 'x' }] }, headers: { 'x-encryption-key': w.keys.publicKey } });
  t.is(stored.status, 200);
  const next = generateKeyPair(2048);
  const newId = (await w.vault.keyRotation.register(createPublicKey(next.publicPem), operator)).id;
  const old = await w.vault.keyring.requireDecryptionKey(w.keys.privateKey);
  const active = (await w.vault.keyring.active())!;

  // The batch holds its transaction open once its copy is written; the purge comes meanwhile.
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let inBatch!: () => void;
  const batchOpen = new Promise<void>((r) => (inBatch = r));
  const rewrap = w.vault.datapoints.dataKeys.rewrap(w.vault.db, old, active, {
    onBatch: async () => {
      inBatch();
      await released;
    },
  });
  await batchOpen;
  let purged = false;
  const purge = w.request('DELETE', `/datasubjects/${subject}/data`).finally(() => (purged = true));
  if (w.vault.dialect === 'postgres') {
    // Until the purge waits on the batch's lock, or (the failure this test is for) runs past it.
    for (const deadline = Date.now() + 10_000; !purged; await new Promise((r) => setTimeout(r, 20))) {
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(w.vault.db);
      if (Number(rows[0].n) > 0) break;
      if (Date.now() > deadline) throw new Error('timed out waiting for the purge to wait on the rewrap');
    }
  } else {
    // SQLite's one writer: the purge waits behind the batch whatever happens meanwhile.
    await new Promise((r) => setTimeout(r, 100));
  }
  release();
  t.is(await rewrap, 1);
  t.is((await purge).status, 200);
  const copies = await w.vault.db.selectFrom('subject_key_wraps').select('subject_key_id').where('encryption_key_id', '=', newId).execute();
  t.deepEqual(copies, [], 'no copy of a destroyed data key');
  t.deepEqual(await w.vault.db.selectFrom('subject_keys').select('id').execute(), []);
});

test('retire counts every data key left on the active key alone, those stored after the register too', async (t) => {
  const own = await startTestVault();
  t.teardown(() => own.close());
  const attribute = unique('ATTR').toUpperCase();
  await defineAttribute(own, attribute);
  const store = async () => {
    const stored = await own.request('POST', `/datasubjects/${unique('s')}/attributes`, { body: { data: [{ attribute, value: 'x' }] }, headers: { 'x-encryption-key': own.keys.publicKey } });
    t.is(stored.status, 200);
  };
  await store();
  const oldId = keyFingerprint(createPublicKey(own.keys.publicPem));
  await own.vault.keyRotation.register(createPublicKey(generateKeyPair(2048).publicPem), operator);
  // Wrapped under the new key, with a copy under the old one that the retire destroys.
  await store();
  await store();
  t.is(await own.vault.keyRotation.rewrap(own.keys.privateKey, operator), 1);
  t.is(await own.vault.keyRotation.retire(oldId, operator), 3);
  const copies = await own.vault.db.selectFrom('subject_key_wraps').select('subject_key_id').execute();
  t.deepEqual(copies, []);
});

test('a store through another process just after a retire leaves no copy under the retired key', async (t) => {
  const a = await startTestVault();
  t.teardown(() => a.close());
  const b = await startTestVault({ env: { VAULT_DB: a.config.db, VAULT_ADMIN_API_KEY: a.adminKey, VAULT_INDEX_KEY: a.config.indexKey!, VAULT_ENCRYPTION_PUBLIC_KEY: a.keys.publicKey } });
  t.teardown(() => b.close());
  const attribute = unique('ATTR').toUpperCase();
  await defineAttribute(a, attribute);
  const next = generateKeyPair(2048);
  const store = (vault: TestVault, publicKey: string) =>
    vault.request('POST', `/datasubjects/${unique('s')}/attributes`, { body: { data: [{ attribute, value: 'x' }] }, headers: { 'x-encryption-key': publicKey }, apiKey: a.adminKey });
  t.is((await store(a, a.keys.publicKey)).status, 200);
  const oldId = keyFingerprint(createPublicKey(a.keys.publicPem));
  await a.vault.keyRotation.register(createPublicKey(next.publicPem), operator);
  // B learns of the new key (a key it does not know is looked up at once) and keeps both for a second.
  t.is((await store(b, next.publicKey)).status, 200);
  t.is(await a.vault.keyRotation.rewrap(a.keys.privateKey, operator), 1);
  await b.vault.keyring.registered();
  await a.vault.keyRotation.retire(oldId, operator);
  // B's list of keys still names the retired one: its store must not wrap a copy under it.
  t.is((await store(b, next.publicKey)).status, 200);
  const copies = await a.vault.db.selectFrom('subject_key_wraps').select('subject_key_id').where('encryption_key_id', '=', oldId).execute();
  t.deepEqual(copies, [], 'the retired private key opens nothing stored after its retirement');
});
