/** `vault restore` into a data directory its user may not write: named, never a bare SQLite error. */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runVaultCli } from '../testing/process.js';

const VAULT_BIN = join(import.meta.dirname, '../../bin/vault.mjs');

test('a restore into a data directory its user may not write names the database and what to change, and changes nothing', async (t) => {
  const parent = mkdtempSync(join(tmpdir(), 'vault-restore-unwritable-'));
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  const dataDir = join(parent, 'data');
  const env = { VAULT_DATA_DIR: dataDir, VAULT_ADMIN_API_KEY: 'cli-test-admin-key-0000' };
  runVaultCli(['migrate'], env);
  const backup = join(parent, 'backup.db');
  runVaultCli(['backup', '--to', backup], env);
  const database = join(dataDir, 'vault.db');
  const before = readFileSync(database);
  // Root ignores modes: as root the restore runs as nobody on root's files, as startup.test.ts does.
  const root = process.getuid?.() === 0;
  chmodSync(parent, 0o755);
  chmodSync(backup, 0o644);
  chmodSync(dataDir, root ? 0o755 : 0o500);
  for (const file of readdirSync(dataDir)) chmodSync(join(dataDir, file), root ? 0o644 : 0o400);
  t.teardown(() => chmodSync(dataDir, 0o700));
  const run = spawnSync(process.execPath, [VAULT_BIN, 'restore', '--from', backup], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    ...(root ? { uid: 65534, gid: 65534 } : {}),
  });
  t.is(run.status, 1);
  t.is(run.stderr, `Failed: the vault cannot write its database ${database} (EACCES): give the user it runs as write access to it and to ${dataDir}, where it writes the database's -wal and -shm files\n`);
  t.is(run.stdout, '');
  t.deepEqual(readFileSync(database), before);
  t.deepEqual(readdirSync(dataDir).sort(), ['index.key', 'vault-private-key.pem', 'vault-public-key.pem', 'vault.db']);
});
