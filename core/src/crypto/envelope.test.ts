import test from 'ava';
import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { ConfigError, loadConfig } from '../config.js';
import { isVaultError } from '../errors.js';
import { startTestVault, testKeyPair, type TestVault } from '../testing/harness.js';
import { DataKeys } from './datakeys.js';
import { EnvelopeError, generateDataKey, open, openValue, pointAad, seal, sealValue, unwrapDataKey, wrapDataKey } from './envelope.js';
import { generateKeyPair, keyFingerprint, parsePrivateKeyHeader, parsePublicKeyHeader } from './keys.js';
import { LruMap } from '../util/lru.js';

const pair = testKeyPair();
const publicKey = createPublicKey(pair.publicPem);
const privateKey = createPrivateKey(pair.privatePem);

test('values round-trip; every seal uses a fresh nonce', (t) => {
  const key = generateDataKey();
  const a = sealValue(key, { first: 'Ada', n: 1 }, 'id-1', 'NAME');
  const b = sealValue(key, { first: 'Ada', n: 1 }, 'id-1', 'NAME');
  t.notDeepEqual(a, b);
  t.deepEqual(openValue(key, a, 'id-1', 'NAME'), { first: 'Ada', n: 1 });
  t.is(openValue(key, sealValue(key, 42, 'x', 'AGE'), 'x', 'AGE'), 42);
  t.false(a.includes(Buffer.from('Ada')));
});

test('a ciphertext opens only on its own row: other id, other attribute, other key or any flipped bit fail', (t) => {
  const key = generateDataKey();
  const sealed = sealValue(key, 'secret', 'id-1', 'EMAIL');
  t.throws(() => openValue(key, sealed, 'id-2', 'EMAIL'), { instanceOf: EnvelopeError });
  t.throws(() => openValue(key, sealed, 'id-1', 'PHONE'), { instanceOf: EnvelopeError });
  t.throws(() => openValue(generateDataKey(), sealed, 'id-1', 'EMAIL'), { instanceOf: EnvelopeError });
  for (let i = 0; i < sealed.length; i++) {
    const copy = Buffer.from(sealed);
    copy[i] ^= 0x01;
    t.throws(() => open(key, copy, pointAad('id-1', 'EMAIL')), { instanceOf: EnvelopeError }, `byte ${i}`);
  }
  t.throws(() => open(key, sealed.subarray(0, 10), pointAad('id-1', 'EMAIL')), { instanceOf: EnvelopeError });
});

test('the AAD encoding is unambiguous', (t) => {
  t.notDeepEqual(pointAad('ab', 'c'), pointAad('a', 'bc'));
  const key = generateDataKey();
  t.throws(() => open(key, seal(key, Buffer.from('v'), pointAad('ab', 'c')), pointAad('a', 'bc')), { instanceOf: EnvelopeError });
});

test('data keys are wrapped with RSA-OAEP and unwrap only with the matching private key', (t) => {
  const key = generateDataKey();
  const wrapped = wrapDataKey(publicKey, key);
  t.not(wrapped.length, key.length);
  t.deepEqual(unwrapDataKey(privateKey, wrapped), key);
  const other = createPrivateKey(generateKeyPair(2048).privatePem);
  t.throws(() => unwrapDataKey(other, wrapped), { instanceOf: EnvelopeError });
  t.throws(() => unwrapDataKey(privateKey, randomBytes(wrapped.length)), { instanceOf: EnvelopeError });
});

test('a private key must prove possession: a forged one with the public modulus is refused', (t) => {
  t.is(keyFingerprint(createPublicKey(parsePrivateKeyHeader(pair.privateKey))), keyFingerprint(publicKey));
  const jwk = publicKey.export({ format: 'jwk' });
  const filler = Buffer.alloc(128, 3).toString('base64url');
  const forged = createPrivateKey({ key: { ...jwk, d: filler, p: filler, q: filler, dp: filler, dq: filler, qi: filler }, format: 'jwk' });
  // OpenSSL takes it, and its public half is the registered key...
  t.is(keyFingerprint(createPublicKey(forged)), keyFingerprint(publicKey));
  const header = Buffer.from(forged.export({ type: 'pkcs8', format: 'pem' }) as string).toString('base64');
  // ...but the vault does not.
  const err = t.throws(() => parsePrivateKeyHeader(header));
  t.true(isVaultError(err) && err.status === 400 && err.message === 'Encoded key provided is invalid');
  t.false(err!.message.includes(header.slice(0, 20)));
});

test('a key header is exactly one PEM block: text or another key before or after it is refused, whitespace is not', (t) => {
  const other = generateKeyPair(2048);
  const header = (pem: string) => Buffer.from(pem).toString('base64');
  for (const [parse, pem, otherPem] of [
    [parsePrivateKeyHeader, pair.privatePem, other.privatePem],
    [parsePublicKeyHeader, pair.publicPem, other.publicPem],
  ] as const) {
    for (const junk of [`${pem}junk`, `junk\n${pem}`, `${pem}\n# a comment\n`, `${pem}${otherPem}`, `${otherPem}${pem}`]) {
      const err = t.throws(() => parse(header(junk)));
      t.true(isVaultError(err) && err.status === 400 && err.message === 'Encoded key provided is invalid');
      t.false(err!.message.includes(pem.split('\n')[1].slice(0, 20)), 'no key material in the error');
    }
    const fingerprint = (key: KeyObject) => keyFingerprint(key.type === 'private' ? createPublicKey(key) : key);
    t.is(fingerprint(parse(header(`\r\n  ${pem.replace(/\n/g, '\r\n')}\n\n`))), keyFingerprint(publicKey));
    t.is(fingerprint(parse(pem)), keyFingerprint(publicKey), 'a bare PEM too');
  }
  // The key given at start is read the same way, so one the vault would refuse stops it, named.
  t.throws(() => loadConfig({ VAULT_ENCRYPTION_PUBLIC_KEY: header(`${pair.publicPem}junk`) }), {
    instanceOf: ConfigError, message: 'VAULT_ENCRYPTION_PUBLIC_KEY must be the base64 of a PEM RSA public key (PKCS#1 or SPKI)',
  });
  t.is(loadConfig({ VAULT_ENCRYPTION_PUBLIC_KEY: pair.publicKey }).encryptionPublicKey, pair.publicKey);
});

test('the LRU keeps the most recently used entries within its bound', (t) => {
  const lru = new LruMap<string, number>(2);
  lru.set('a', 1);
  lru.set('b', 2);
  t.is(lru.get('a'), 1);
  lru.set('c', 3);
  t.is(lru.get('b'), undefined, 'the least recently used entry went');
  t.is(lru.get('a'), 1);
  t.is(lru.size, 2);
  lru.deleteWhere((value) => value === 1);
  t.is(lru.get('a'), undefined);
  t.throws(() => new LruMap(0));
});

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

async function credential() {
  return v.vault.keyring.requireDecryptionKey(pair.privateKey);
}

test('a store reuses the in-memory key while its wrapped copy exists, and makes a new one otherwise', async (t) => {
  const keys = new DataKeys(10);
  const active = (await v.vault.keyring.active())!;
  const entity = `e-${randomBytes(4).toString('hex')}`;
  const first = await v.vault.db.transaction().execute((trx) => keys.forStore(trx, entity, active, new Date().toISOString()));
  const again = await v.vault.db.transaction().execute((trx) => keys.forStore(trx, entity, active, new Date().toISOString()));
  t.is(again.id, first.id);
  // Another process purges the subject: its wrapped key row goes.
  await v.vault.db.deleteFrom('subject_keys').where('entity_id', '=', entity).execute();
  const fresh = await v.vault.db.transaction().execute((trx) => keys.forStore(trx, entity, active, new Date().toISOString()));
  t.not(fresh.id, first.id);
  t.notDeepEqual(fresh.key, first.key);
  const row = await v.vault.db.selectFrom('subject_keys').selectAll().where('id', '=', fresh.id).executeTakeFirstOrThrow();
  t.is(row.encryption_key_id, active.id);
  t.false(Buffer.from(row.wrapped_key).includes(fresh.key), 'only the wrapped copy is stored');
  t.deepEqual(unwrapDataKey(privateKey, Buffer.from(row.wrapped_key)), fresh.key);
});

test('a store after another process shredded the subject\'s data key seals under a new one, and both stores read as they should', async (t) => {
  await v.request('POST', '/attributes', { body: { key: 'ENVELOPE_NOTE', schema: 'string', repeatable: true } });
  const entity = `e-${randomBytes(4).toString('hex')}`;
  const store = (value: string) =>
    v.request('POST', `/entities/${entity}/attributes`, { body: { data: [{ attribute: 'ENVELOPE_NOTE', value }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
  t.is((await store('before')).status, 200);
  const [first] = await v.vault.db.selectFrom('subject_keys').select('id').where('entity_id', '=', entity).execute();
  await v.vault.db.deleteFrom('subject_keys').where('entity_id', '=', entity).execute();
  t.is((await store('after')).status, 200);
  const keys = await v.vault.db.selectFrom('subject_keys').select('id').where('entity_id', '=', entity).execute();
  t.is(keys.length, 1);
  t.not(keys[0].id, first.id, 'the cached key whose row is gone is not used again');
  const read = await v.request('GET', `/entities/${entity}/attributes/ENVELOPE_NOTE`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.deepEqual(read.body.data.map((p: { value: string }) => p.value), ['after'], 'the value under the shredded key is gone for good');
});

test('reads unwrap each data key once, and only for a holder of the wrapping key', async (t) => {
  const writer = new DataKeys(10);
  const active = (await v.vault.keyring.active())!;
  const entity = `e-${randomBytes(4).toString('hex')}`;
  const made = await v.vault.db.transaction().execute((trx) => writer.forStore(trx, entity, active, new Date().toISOString()));

  const reader = new DataKeys(10);
  const cred = await credential();
  const got = await reader.forRead(v.vault.db, [made.id, made.id], cred);
  t.deepEqual(got.get(made.id), made.key);
  await reader.forRead(v.vault.db, [made.id], await credential());
  t.is(reader.unwraps, 1);

  // The same cached key is not handed to a caller proving another registered key.
  const other = generateKeyPair(2048);
  await v.vault.keyring.register(createPublicKey(other.publicPem), 'retired');
  const otherCred = await v.vault.keyring.requireDecryptionKey(other.privateKey);
  const err = await t.throwsAsync(reader.forRead(v.vault.db, [made.id], otherCred));
  t.true(isVaultError(err) && err.status === 400);

  reader.evictEntity(entity);
  await reader.forRead(v.vault.db, [made.id], cred);
  t.is(reader.unwraps, 2, 'an evicted key must be unwrapped again');
  await v.vault.db.deleteFrom('subject_keys').where('id', '=', made.id).execute();
  reader.evictEntity(entity);
  t.is((await reader.forRead(v.vault.db, [made.id], cred)).size, 0, 'a shredded key is gone for good');
});

test('a key rotation: after rewrap both pairs read everything; after retire only the new one', async (t) => {
  // Its own vault: the rotation changes the active key.
  const v = await startTestVault();
  t.teardown(() => v.close());
  const credential = () => v.vault.keyring.requireDecryptionKey(pair.privateKey);
  const NAME = `ROT_${randomBytes(4).toString('hex')}`;
  await v.request('POST', '/attributes', { body: { key: NAME } });
  const subject = `rot-${randomBytes(4).toString('hex')}`;
  const stored = await v.request('POST', `/entities/${subject}/attributes`, { body: { data: [{ attribute: NAME, value: 'before rotation' }] }, headers: { 'x-encryption-key': pair.publicKey } });
  t.is(stored.status, 200);
  const old = await credential();
  const next = generateKeyPair(2048);
  const registered = await v.vault.keyring.register(createPublicKey(next.publicPem), 'active');
  const keys = v.vault.datapoints.dataKeys;
  const url = `/entities/${subject}/attributes/${NAME}`;
  const readWith = (privateKeyHeader: string) => v.request('GET', url, { headers: { 'x-decryption-key': privateKeyHeader } });

  const count = await keys.rewrap(v.vault.db, old, registered);
  t.true(count >= 1);
  t.is(await keys.rewrap(v.vault.db, old, registered), 0, 'a second rewrap has nothing left to do');
  keys.clear();
  t.is((await readWith(next.privateKey)).body.data[0].value, 'before rotation');
  t.is((await readWith(pair.privateKey)).body.data[0].value, 'before rotation', 'the old pair still reads during the rotation');

  // Stored during the rotation: readable with either pair as well.
  const during = await v.request('POST', `/entities/${subject}/attributes`, { body: { data: [{ attribute: NAME, value: 'during' }] }, headers: { 'x-encryption-key': next.publicKey } });
  t.is(during.status, 200);
  keys.clear();
  t.is((await readWith(pair.privateKey)).body.data[0].value, 'during');

  await keys.retire(v.vault.db, old.registered, registered);
  await v.vault.keyring.remove(old.registered.id, { applicationId: 'vault-cli' }, registered.id, 0);
  keys.clear();
  t.is((await readWith(next.privateKey)).body.data[0].value, 'during');
  const withOld = await readWith(pair.privateKey);
  t.is(withOld.status, 400);
  t.is(withOld.body.message, 'Encoded key provided is invalid');
  const rows = await v.vault.db.selectFrom('subject_keys').select('wrapped_key').execute();
  const copies = await v.vault.db.selectFrom('subject_key_wraps').select('wrapped_key').execute();
  for (const row of [...rows, ...copies]) t.throws(() => unwrapDataKey(privateKey, Buffer.from(row.wrapped_key)), { instanceOf: EnvelopeError });
});
