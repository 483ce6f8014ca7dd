/**
 * Backup and restore as an operator runs them: `vault backup` while the vault serves,
 * disaster, `vault restore`, and every value reads back with the private key.
 */
import test from 'ava';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPostgresDatabase } from '../core/src/testing/harness.js';
import { callVault, runVaultCli, spawnVault, type VaultProcess } from '../core/src/testing/process.js';

const cli = runVaultCli;
const call = callVault;

async function seed(v: VaultProcess, subjects: number): Promise<void> {
  await call(v, 'POST', '/attributes', { key: 'EMAIL', schema: 'string', indexed: true });
  for (let i = 0; i < subjects; i++) {
    const res = await call(v, 'POST', `/datasubjects/s${i}/attributes`, { data: [{ attribute: 'EMAIL', value: `person${i}@example.org` }] }, { 'x-encryption-key': v.keys.publicKey });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  }
}

async function readAll(v: VaultProcess, subjects: number): Promise<string[]> {
  const values: string[] = [];
  for (let i = 0; i < subjects; i++) {
    const res = await call(v, 'GET', `/datasubjects/s${i}/attributes/EMAIL`, undefined, { 'x-decryption-key': v.keys.privateKey });
    values.push(res.status === 200 ? res.body.data[0].value : `missing (${res.status})`);
  }
  return values;
}

const expected = (n: number) => Array.from({ length: n }, (_, i) => `person${i}@example.org`);

test('SQLite: online backup while serving, then restore after the database is lost', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-backup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // SQLite whatever the suite's dialect: this is the SQLite backup path.
  const env = { VAULT_INDEX_KEY: randomBytes(32).toString('base64'), VAULT_DB: `sqlite:${join(dir, 'data', 'vault.db')}` };
  const vault = await spawnVault({ dataDir: join(dir, 'data'), env });
  t.teardown(() => vault.stop('SIGKILL'));
  await seed(vault, 20);

  const backup = join(dir, 'backup.db');
  // Stores keep arriving while the backup runs.
  const [output] = await Promise.all([
    Promise.resolve().then(() => cli(['backup', '--to', backup], vault.env)),
    call(vault, 'POST', '/datasubjects/late/attributes', { data: [{ attribute: 'EMAIL', value: 'late@example.org' }] }, { 'x-encryption-key': vault.keys.publicKey }),
  ]);
  t.regex(output, /Backed up to/);
  t.true(existsSync(backup));
  await vault.stop('SIGTERM');

  rmSync(join(dir, 'data', 'vault.db'));
  t.regex(cli(['restore', '--from', backup], vault.env), /Restored/);
  const restored = await vault.restart();
  t.teardown(() => restored.stop('SIGKILL'));
  t.deepEqual(await readAll(restored, 20), expected(20));
  const search = await call(restored, 'POST', '/search', { query: { values: [{ attribute: 'EMAIL', value: 'person7@example.org' }] } });
  t.is(search.body.data[0].entityId, 's7', 'the blind index works on the restored copy');
});

test('PostgreSQL: pg_dump backup and pg_restore into a fresh database', async (t) => {
  const source = await createPostgresDatabase();
  const target = await createPostgresDatabase();
  t.teardown(async () => {
    await source.drop();
    await target.drop();
  });
  const dir = mkdtempSync(join(tmpdir(), 'vault-pgbackup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const env = { VAULT_DB: source.url, VAULT_INDEX_KEY: randomBytes(32).toString('base64') };
  const vault = await spawnVault({ env });
  t.teardown(() => vault.dispose());
  await seed(vault, 10);
  const backup = join(dir, 'vault.dump');
  cli(['backup', '--to', backup], vault.env);
  await vault.stop('SIGTERM');

  cli(['restore', '--from', backup], { ...vault.env, VAULT_DB: target.url });
  const { VAULT_PORT: _port, ...settings } = vault.env;
  const restored = await spawnVault({ env: { ...settings, VAULT_DB: target.url } });
  t.teardown(() => restored.dispose());
  t.deepEqual(await readAll(restored, 10), expected(10));
  const client = new pg.Client({ connectionString: target.url });
  await client.connect();
  const { rows } = await client.query('select count(*)::int as n from datapoints');
  await client.end();
  t.is(rows[0].n, 10);
});
