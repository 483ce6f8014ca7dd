/** Key helpers: generation in the header format, conversions, files and environment. */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import test from 'ava';
import { VaultClient } from './client.js';
import { parsePrivateKeyHeader, parsePublicKeyHeader } from '../../core/src/crypto/keys.js';
import { clientFromEnv } from './env.js';
import { VaultKeyError, VaultNetworkError } from './errors.js';
import { generateKeyPair, isPrivateKey, loadKeyFiles, loadKeysFromEnv, saveKeyPair, toHeaderValue, toPem, type KeyPair } from './keys.js';

let pair: KeyPair;
test.before(async () => {
  pair = await generateKeyPair({ modulusLength: 2048 });
});

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sdk-keys-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('generateKeyPair: header values are base64 of the PEMs, 3072-bit RSA by default', async (t) => {
  const fresh = await generateKeyPair();
  t.is(Buffer.from(fresh.publicKey, 'base64').toString('utf8'), fresh.publicPem);
  t.is(Buffer.from(fresh.privateKey, 'base64').toString('utf8'), fresh.privatePem);
  t.regex(fresh.publicPem, /^-----BEGIN PUBLIC KEY-----\n/);
  t.regex(fresh.privatePem, /^-----BEGIN PRIVATE KEY-----\n/);
  t.is(createPublicKey(fresh.publicPem).asymmetricKeyDetails?.modulusLength, 3072);
  t.is(createPublicKey(createPrivateKey(fresh.privatePem)).export({ type: 'spki', format: 'pem' }), fresh.publicPem);
  t.is(createPublicKey(pair.publicPem).asymmetricKeyDetails?.modulusLength, 2048);
});

test('toHeaderValue and toPem convert either way, and are idempotent', (t) => {
  t.is(toHeaderValue(pair.publicPem), pair.publicKey);
  t.is(toHeaderValue(pair.publicKey), pair.publicKey);
  t.is(toHeaderValue(`  ${pair.publicPem.trim()}  `), pair.publicKey);
  t.is(toPem(pair.privateKey), pair.privatePem);
  t.is(toPem(pair.privatePem), pair.privatePem);
  t.throws(() => toPem('bm90IGEga2V5'), { message: 'Key is neither PEM nor base64 of a PEM' });
});

test('saveKeyPair writes PEM files, the private one for its owner only, and never overwrites', async (t) => {
  const dir = tempDir(t);
  const files = { publicKeyFile: join(dir, 'vault.pub.pem'), privateKeyFile: join(dir, 'vault.key.pem') };
  await saveKeyPair(pair, files);
  t.is(readFileSync(files.publicKeyFile, 'utf8'), pair.publicPem);
  t.is(readFileSync(files.privateKeyFile, 'utf8'), pair.privatePem);
  t.is(statSync(files.privateKeyFile).mode & 0o777, 0o600);
  const other = await generateKeyPair({ modulusLength: 1024 });
  await t.throwsAsync(saveKeyPair(other, files), { code: 'EEXIST' });
  t.is(readFileSync(files.privateKeyFile, 'utf8'), pair.privatePem);
});

test('loadKeyFiles reads PEM or base64-of-PEM files into header values', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'pub.pem'), pair.publicPem);
  writeFileSync(join(dir, 'key.b64'), `${pair.privateKey}\n`);
  t.deepEqual(await loadKeyFiles({ publicKeyFile: join(dir, 'pub.pem'), privateKeyFile: join(dir, 'key.b64') }), {
    encryptionKey: pair.publicKey,
    decryptionKey: pair.privateKey,
  });
  t.deepEqual(await loadKeyFiles({ publicKeyFile: join(dir, 'pub.pem') }), { encryptionKey: pair.publicKey });
});

test('loading refuses what is not the right kind of key, without quoting it', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'swapped.pem'), pair.publicPem);
  const err = await t.throwsAsync(loadKeyFiles({ privateKeyFile: join(dir, 'swapped.pem') }));
  t.is(err?.message, `${join(dir, 'swapped.pem')} does not hold an RSA private key in PEM (or base64 of PEM)`);

  const envErr = await t.throwsAsync(loadKeysFromEnv({ VAULT_ENCRYPTION_KEY: pair.privateKey }));
  t.is(envErr?.message, 'VAULT_ENCRYPTION_KEY does not hold an RSA public key in PEM (or base64 of PEM)');
  t.false(envErr!.message.includes(pair.privateKey.slice(0, 40)));
  await t.throwsAsync(loadKeysFromEnv({ VAULT_DECRYPTION_KEY: 'garbage' }), { message: /^VAULT_DECRYPTION_KEY does not hold/ });
});

test('loadKeysFromEnv: values or files; a private key only when one is configured', async (t) => {
  t.deepEqual(await loadKeysFromEnv({ VAULT_ENCRYPTION_KEY: pair.publicPem }), { encryptionKey: pair.publicKey });
  t.deepEqual(await loadKeysFromEnv({ VAULT_ENCRYPTION_KEY: pair.publicKey, VAULT_DECRYPTION_KEY: pair.privateKey }), {
    encryptionKey: pair.publicKey,
    decryptionKey: pair.privateKey,
  });
  const dir = tempDir(t);
  writeFileSync(join(dir, 'pub.pem'), pair.publicPem);
  writeFileSync(join(dir, 'key.pem'), pair.privatePem);
  t.deepEqual(await loadKeysFromEnv({ VAULT_ENCRYPTION_KEY_FILE: join(dir, 'pub.pem'), VAULT_DECRYPTION_KEY_FILE: join(dir, 'key.pem') }), {
    encryptionKey: pair.publicKey,
    decryptionKey: pair.privateKey,
  });
  t.deepEqual(await loadKeysFromEnv({}), {});
});

test('a client refuses a private key where the public one belongs', async (t) => {
  // A VaultKeyError naming the option, as the loaders' refusal of the same mistake is.
  const refused = { instanceOf: VaultKeyError, message: 'encryptionKey holds a private key; stores take the public key, and the private key is only sent on reads' };
  const made = t.throws(() => new VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), encryptionKey: pair.privateKey }), refused);
  t.is(made?.source, 'encryptionKey');
  const client = new VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), retry: false });
  t.teardown(() => client.close());
  const perCall = await t.throwsAsync(client.dataSubjects.storeAttributes('s', [{ attribute: 'A', value: 'v' }], { encryptionKey: pair.privatePem }), refused);
  t.is(perCall?.source, 'encryptionKey');
  t.true(isPrivateKey(pair.privateKey));
  t.false(isPrivateKey(pair.publicKey));
});

test('a client, its groups and its reporter show no API key or private key when logged', async (t) => {
  const apiKey = 'secret-api-key-0123456789';
  const tlsKey = 'TLS-CLIENT-PRIVATE-KEY';
  const client = new VaultClient({ url: 'http://127.0.0.1:1', apiKey, encryptionKey: pair.publicKey, decryptionKey: pair.privateKey, tls: { key: tlsKey }, retry: false });
  t.teardown(() => client.close());
  const reporter = client.reporter({ sidecar: true });
  const secrets = [apiKey, pair.privateKey, tlsKey];
  // Port 1 refuses the connection: a read that got as far as the transport, and its error.
  const failed = await t.throwsAsync(client.data.get('p'), { instanceOf: VaultNetworkError });
  for (const [name, shown] of Object.entries({
    inspect: inspect(client),
    deep: inspect(client, { depth: Infinity, showHidden: true }),
    entities: inspect(client.entities, { depth: Infinity, showHidden: true }),
    data: inspect(client.data, { depth: Infinity, showHidden: true }),
    reporter: inspect(reporter, { depth: Infinity, showHidden: true }),
    json: JSON.stringify(client),
    string: String(client),
    error: inspect(failed, { depth: Infinity, showHidden: true }),
  })) {
    for (const secret of secrets) t.false(shown.includes(secret), `${name} shows ${secret.slice(0, 12)}…`);
  }
});

test('an API key read with a trailing newline is sent without it; one that could never sign in is refused at once, unquoted', async (t) => {
  const seen: Array<string | undefined> = [];
  const server = createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fromFile = new VaultClient({ url, apiKey: '  secret-api-key-0123456789\r\n', keepAlive: false });
  t.teardown(() => fromFile.close());
  t.deepEqual(await fromFile.tags.list(), []);
  const fromEnv = await clientFromEnv({ VAULT_URL: url, VAULT_API_KEY: 'secret-api-key-0123456789\n' }, { keepAlive: false });
  t.teardown(() => fromEnv.close());
  t.deepEqual(await fromEnv.tags.list(), []);
  t.deepEqual(seen, ['Bearer secret-api-key-0123456789', 'Bearer secret-api-key-0123456789']);

  for (const apiKey of ['secret api key 0123456789', 'secret-api-key-\n0123456789', 'secret-api-key-0123456789\u00e9']) {
    const err = t.throws(() => new VaultClient({ url, apiKey }), { instanceOf: TypeError, message: 'apiKey must be printable ASCII, without spaces' });
    t.false(err!.message.includes('secret'));
  }
  t.throws(() => new VaultClient({ url, apiKey: ' \n' }), { instanceOf: TypeError, message: 'apiKey is required' });
  t.is(seen.length, 2);
});

test('a key given as a PEM, or as base64 wrapped over lines, is sent in the header form the vault takes', async (t) => {
  const seen: Array<{ encryption?: string; decryption?: string }> = [];
  const server = createServer((req, res) => {
    seen.push({ encryption: req.headers['x-encryption-key'] as string | undefined, decryption: req.headers['x-decryption-key'] as string | undefined });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // What `base64 key.pem` prints: 76 columns a line.
  const wrapped = (pem: string) => Buffer.from(pem, 'utf8').toString('base64').replace(/.{76}/g, '$&\n');
  const store = [{ attribute: 'A', value: 'v' }];

  const client = new VaultClient({ url, apiKey: 'k'.repeat(20), encryptionKey: pair.publicPem, decryptionKey: pair.privatePem, keepAlive: false });
  t.teardown(() => client.close());
  await client.dataSubjects.storeAttributes('s', store);
  await client.dataSubjects.getAttribute('s', 'A');
  await client.dataSubjects.storeAttributes('s', store, { encryptionKey: wrapped(pair.publicPem) });
  await client.data.get('p', { decryptionKey: wrapped(pair.privatePem) });
  await client.dataSubjects.getAttributes('s', { decryptionKey: `\r\n${pair.privatePem.replaceAll('\n', '\r\n')}` });
  const wrappedClient = new VaultClient({ url, apiKey: 'k'.repeat(20), encryptionKey: wrapped(pair.publicPem), decryptionKey: wrapped(pair.privatePem), keepAlive: false });
  t.teardown(() => wrappedClient.close());
  await wrappedClient.dataSubjects.storeAttributes('s', store);
  await wrappedClient.data.get('p');

  t.is(seen.length, 7);
  for (const { encryption, decryption } of seen) {
    if (encryption !== undefined) t.is(parsePublicKeyHeader(encryption).export({ type: 'spki', format: 'pem' }), pair.publicPem);
    if (decryption !== undefined) t.is(parsePrivateKeyHeader(decryption).export({ type: 'pkcs8', format: 'pem' }), pair.privatePem);
    t.true((encryption ?? decryption) !== undefined);
  }
});

test('clientFromEnv needs an API key', async (t) => {
  await t.throwsAsync(clientFromEnv({}), { message: 'VAULT_API_KEY is not set' });
  await t.throwsAsync(clientFromEnv({ VAULT_API_KEY: 'k'.repeat(20), VAULT_ENCRYPTION_KEY: pair.privateKey }), { message: /^VAULT_ENCRYPTION_KEY does not hold/ });
});

test('clientFromEnv: an override given as undefined (a setting left unset) keeps what the environment says', async (t) => {
  const seen: Array<string | undefined> = [];
  const server = createServer((req, res) => {
    seen.push(req.headers['x-encryption-key'] as string | undefined);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const unset: { url?: string; encryptionKey?: string } = {};
  const c = await clientFromEnv({ VAULT_URL: url, VAULT_API_KEY: 'k'.repeat(20), VAULT_ENCRYPTION_KEY: pair.publicKey }, { url: unset.url, encryptionKey: unset.encryptionKey });
  t.teardown(() => c.close());
  await c.dataSubjects.storeAttributes('s', [{ attribute: 'A', value: 'v' }]);
  t.is(seen.length, 1, 'sent to VAULT_URL');
  t.is(seen[0], pair.publicKey, 'with VAULT_ENCRYPTION_KEY');
});

test('a key with text around its PEM, or a second key, is refused where it is given, without quoting it', async (t) => {
  const dir = tempDir(t);
  const other = await generateKeyPair({ modulusLength: 1024 });
  const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  const cases = {
    before: `Bag Attributes\n    localKeyID: 01 00 00 00\n${pair.privatePem}`,
    after: `${pair.privatePem}# the vault's key\n`,
    twoKeys: `${pair.privatePem}${other.privatePem}`,
  };
  const refused = (source: string) => ({
    instanceOf: VaultKeyError,
    message: `${source} holds more than one PEM block: text before or after the key, or a second key, which the vault refuses`,
  });
  for (const [name, pem] of Object.entries(cases)) {
    const file = join(dir, `${name}.pem`);
    writeFileSync(file, pem);
    const err = await t.throwsAsync(loadKeyFiles({ privateKeyFile: file }), refused(file));
    t.is(err?.source, file);
    t.false(err!.message.includes('MII'), 'no key material in the message');
    await t.throwsAsync(loadKeysFromEnv({ VAULT_DECRYPTION_KEY: base64(pem) }), refused('VAULT_DECRYPTION_KEY'));
    t.throws(() => toPem(pem), refused('Key'));
    t.throws(() => toHeaderValue(base64(pem)), refused('Key'));
    t.throws(() => new VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), decryptionKey: base64(pem) }), refused('decryptionKey'));
    const publicPem = pem.replaceAll(pair.privatePem, pair.publicPem).replaceAll(other.privatePem, other.publicPem);
    t.throws(() => new VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), encryptionKey: base64(publicPem) }), refused('encryptionKey'));
  }

  // A key given for one call is checked before anything is sent (port 1 would refuse the connection).
  const client = new VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), retry: false });
  t.teardown(() => client.close());
  const twoPublic = base64(`${pair.publicPem}${other.publicPem}`);
  await t.throwsAsync(client.dataSubjects.storeAttributes('s', [{ attribute: 'A', value: 'v' }], { encryptionKey: twoPublic }), refused('encryptionKey'));
  await t.throwsAsync(client.data.get('p', { decryptionKey: base64(cases.after) }), refused('decryptionKey'));
  await t.throwsAsync(client.request({ method: 'GET', path: '/data/p', headers: { 'X-Decryption-Key': base64(cases.before) }, idempotent: true }), refused('decryptionKey'));
});

test('a key with surrounding whitespace or CRLF line ends is one PEM block, and the vault takes it', async (t) => {
  const dir = tempDir(t);
  const crlf = (pem: string) => pem.replaceAll('\n', '\r\n');
  const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  const publicForms = [`\n\n  ${pair.publicPem}\n\t`, crlf(pair.publicPem), `\r\n${crlf(pair.publicPem)}\r\n\r\n`];
  const privateForms = [`  ${pair.privatePem}\n\n`, crlf(pair.privatePem), `\r\n${crlf(pair.privatePem)}  `];
  for (const [i, pem] of publicForms.entries()) {
    writeFileSync(join(dir, `pub${i}.pem`), pem);
    const { encryptionKey } = await loadKeyFiles({ publicKeyFile: join(dir, `pub${i}.pem`) });
    t.is(parsePublicKeyHeader(encryptionKey).export({ type: 'spki', format: 'pem' }), pair.publicPem);
    t.notThrows(() => new VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), encryptionKey: base64(pem) }).close());
    t.notThrows(() => parsePublicKeyHeader(base64(pem)), 'the vault takes what the SDK sends as given');
    t.is(toPem(pem).trim(), pem.trim());
  }
  for (const [i, pem] of privateForms.entries()) {
    writeFileSync(join(dir, `key${i}.pem`), pem);
    const { decryptionKey } = await loadKeyFiles({ privateKeyFile: join(dir, `key${i}.pem`) });
    t.is(parsePrivateKeyHeader(decryptionKey).export({ type: 'pkcs8', format: 'pem' }), pair.privatePem);
    t.notThrows(() => new VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), decryptionKey: base64(pem) }).close());
    t.notThrows(() => parsePrivateKeyHeader(base64(pem)));
  }
});
