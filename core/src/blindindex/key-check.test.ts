import test from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresDatabase, startTestVault } from '../testing/harness.js';

const dialects = [
  ['SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vault-index-key-'));
    return { url: `sqlite:${join(dir, 'vault.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }],
  ['PostgreSQL', createPostgresDatabase],
] as const;

for (const [dialect, database] of dialects) {
  test(`${dialect}: a process with another blind-index key than the database's is refused at start, one with the same starts`, async (t) => {
    const db = await database();
    const first = await startTestVault({ env: { VAULT_DB: db.url } });
    t.teardown(async () => {
      await first.close();
      await db.drop();
    });
    const shared = { VAULT_DB: db.url, VAULT_ADMIN_API_KEY: first.adminKey, VAULT_ENCRYPTION_PUBLIC_KEY: first.keys.publicKey };

    await t.throwsAsync(startTestVault({ env: { ...shared, VAULT_INDEX_KEY: randomBytes(32).toString('base64') } }), {
      message: /^the blind-index key \(VAULT_INDEX_KEY\) is not the one this vault's database was indexed with: give every process the same key/,
    });

    // No key at all (another host's data directory, a restore elsewhere): none is made, none written.
    const bare = mkdtempSync(join(tmpdir(), 'vault-index-key-bare-'));
    t.teardown(() => rmSync(bare, { recursive: true, force: true }));
    await t.throwsAsync(startTestVault({ env: { ...shared, VAULT_INDEX_KEY: '', VAULT_DATA_DIR: bare } }), {
      message: /^there is no blind-index key here \(VAULT_INDEX_KEY, or .*index\.key\), and this vault's database was indexed with one/,
    });
    t.false(existsSync(join(bare, 'index.key')));

    const second = await startTestVault({ env: { ...shared, VAULT_INDEX_KEY: first.config.indexKey! } });
    await second.close();
    t.pass();
  });
}

test('a vault that generated its blind-index key writes it, and starts again with it', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-index-key-gen-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { VAULT_DATA_DIR: dataDir, VAULT_INDEX_KEY: '', VAULT_DB: `sqlite:${join(dataDir, 'vault.db')}` };
  const first = await startTestVault({ env });
  const adminKey = first.adminKey;
  await first.app.close();
  await first.vault.close();
  t.true(existsSync(join(dataDir, 'index.key')));
  const written = readFileSync(join(dataDir, 'index.key'), 'utf8');
  const again = await startTestVault({ env: { ...env, VAULT_ADMIN_API_KEY: adminKey, VAULT_ENCRYPTION_PUBLIC_KEY: first.keys.publicKey } });
  await again.app.close();
  await again.vault.close();
  t.is(readFileSync(join(dataDir, 'index.key'), 'utf8'), written);
});

test('a database from before the check, already indexed, is not given a key made up on the spot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-index-key-old-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const url = `sqlite:${join(dir, 'vault.db')}`;
  const first = await startTestVault({ env: { VAULT_DB: url } });
  t.is((await first.request('POST', '/attributes', { body: { name: 'EMAIL', indexed: true } })).status, 201);
  const stored = await first.request('POST', '/datasubjects/ada/attributes', { body: { data: [{ attribute: 'EMAIL', value: 'ada@example.org' }] }, headers: { 'x-encryption-key': first.keys.publicKey } });
  t.is(stored.status, 200);
  // As a release before the check left it.
  await first.vault.db.deleteFrom('index_key_check').execute();
  await first.app.close();
  await first.vault.close();
  const shared = { VAULT_DB: url, VAULT_ADMIN_API_KEY: first.adminKey, VAULT_ENCRYPTION_PUBLIC_KEY: first.keys.publicKey };

  const bare = mkdtempSync(join(tmpdir(), 'vault-index-key-bare-'));
  t.teardown(() => rmSync(bare, { recursive: true, force: true }));
  await t.throwsAsync(startTestVault({ env: { ...shared, VAULT_INDEX_KEY: '', VAULT_DATA_DIR: bare } }), {
    message: /^there is no blind-index key here \(VAULT_INDEX_KEY, or .*index\.key\), and this vault's database was indexed with one/,
  });
  t.false(existsSync(join(bare, 'index.key')));

  const again = await startTestVault({ env: { ...shared, VAULT_INDEX_KEY: first.config.indexKey! } });
  t.teardown(() => again.close());
  const found = await again.request('POST', '/search', { body: { query: { values: [{ attribute: 'EMAIL', value: 'ada@example.org' }] } }, apiKey: first.adminKey });
  t.is(found.body.data?.[0]?.entityId, 'ada', JSON.stringify(found.body));
});
