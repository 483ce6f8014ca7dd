/**
 * Backup and restore as an operator runs them: `vault backup` while the vault serves,
 * disaster, `vault restore`, and every value reads back with the private key.
 */
import test from 'ava';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import pg from 'pg';
import { createPostgresDatabase } from '../core/src/testing/harness.js';
import { callVault, REPO_ROOT, runVaultCli, spawnVault, type VaultProcess } from '../core/src/testing/process.js';

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
  t.is(statSync(backup).mode & 0o777, 0o600, 'a backup is as private as the database');

  // A backup over the live database would swap the file out from under the vault.
  const live = join(dir, 'data', 'vault.db');
  for (const over of [live, join(dir, 'data', '..', 'data', 'vault.db'), `${live}-wal`]) {
    const onItself = t.throws(() => cli(['backup', '--to', over], vault.env)) as Error & { status?: number; stderr?: string };
    t.is(onItself.status, 1, over);
    t.is(String(onItself.stderr).trim(), `--to names the vault's own database (${live}): back up to another file`);
  }
  t.is((await call(vault, 'POST', '/datasubjects/after/attributes', { data: [{ attribute: 'EMAIL', value: 'after@example.org' }] }, { 'x-encryption-key': vault.keys.publicKey })).status, 200);

  // A restore under the running vault would delete its log and replace the file beneath it.
  const refused = t.throws(() => cli(['restore', '--from', backup], vault.env)) as Error & { status?: number; stderr?: string };
  t.is(refused.status, 1);
  t.is(String(refused.stderr).trim(), `${join(dir, 'data', 'vault.db')} is open in another process (a running vault?): stop it before restoring`);
  const late = await call(vault, 'GET', '/datasubjects/late/attributes/EMAIL', undefined, { 'x-decryption-key': vault.keys.privateKey });
  t.is(late.body.data[0].value, 'late@example.org', 'the running vault kept its data');
  await vault.stop('SIGTERM');

  // A file that is not a vault database is refused before anything is replaced.
  const garbage = join(dir, 'garbage.db');
  writeFileSync(garbage, 'not a database at all');
  const notVault = t.throws(() => cli(['restore', '--from', garbage], vault.env)) as Error & { status?: number; stderr?: string };
  t.is(notVault.status, 1);
  t.is(String(notVault.stderr).trim(), `${garbage} is not a vault database made by \`vault backup\`: nothing was changed`);
  t.true(existsSync(live));

  rmSync(live);
  chmodSync(backup, 0o644);
  t.regex(cli(['restore', '--from', backup], vault.env), /Restored/);
  // Copied beside the database and renamed over it, with nothing left beside it.
  t.deepEqual(readdirSync(join(dir, 'data')).filter((name) => name.includes('.partial-')), []);
  // Restored where no blind-index key is at hand, the operator is told before starting.
  const bare = join(dir, 'elsewhere');
  const warned = spawnSync(process.execPath, [join(REPO_ROOT, 'core/bin/vault.mjs'), 'restore', '--from', backup], {
    env: { ...process.env, VAULT_DATA_DIR: bare, VAULT_DB: `sqlite:${join(dir, 'elsewhere.db')}`, VAULT_INDEX_KEY: '' },
    encoding: 'utf8',
  });
  t.is(warned.status, 0);
  t.regex(warned.stderr, /No blind-index key here \(VAULT_INDEX_KEY, or .*index\.key\): put the one kept with the backup in place/);
  t.is(statSync(live).mode & 0o777, 0o600, 'restored as private as a new database, whatever the backup file’s mode');
  const restored = await vault.restart();
  t.teardown(() => restored.stop('SIGKILL'));
  t.deepEqual(await readAll(restored, 20), expected(20));
  const search = await call(restored, 'POST', '/search', { query: { values: [{ attribute: 'EMAIL', value: 'person7@example.org' }] } });
  t.is(search.body.data[0].entityId, 's7', 'the blind index works on the restored copy');
});

test('SQLite: a backup finishes while every read writes, and restores to a valid log', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-backup-busy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dbPath = join(dir, 'data', 'vault.db');
  const env = { VAULT_INDEX_KEY: randomBytes(32).toString('base64'), VAULT_DB: `sqlite:${dbPath}`, VAULT_RATE_LIMIT_MAX: '0' };
  const vault = await spawnVault({ dataDir: join(dir, 'data'), env });
  t.teardown(() => vault.stop('SIGKILL'));
  await seed(vault, 20);
  // Enough pages that a copy takes many steps: 20,000 audited events.
  const events = (b: number) => Array.from({ length: 1000 }, (_, i) => ({ eventType: 'STORE', subjectId: `audited-${b}-${i}`, applicationId: 'crm', data: { attribute: 'EMAIL' } }));
  for (let b = 0; b < 20; b++) t.is((await call(vault, 'POST', '/auditlogs/bulk', events(b))).status, 200);
  t.true(statSync(dbPath).size > 4 * 1024 * 1024);

  // Eight clients keep reading, and each read commits its activity record, through the backup.
  let reading = true;
  let answered = 0;
  const readers = Array.from({ length: 8 }, async (_, r) => {
    for (let i = r; reading; i++) {
      const res = await call(vault, 'GET', `/datasubjects/s${i % 20}/attributes/EMAIL`, undefined, { 'x-decryption-key': vault.keys.privateKey });
      if (res.status === 200) answered++;
    }
  });
  await new Promise((r) => setTimeout(r, 300));
  const backup = join(dir, 'backup.db');
  const before = answered;
  let stdout: string;
  let during: number;
  try {
    ({ stdout } = await promisify(execFile)(process.execPath, [join(REPO_ROOT, 'core/bin/vault.mjs'), 'backup', '--to', backup], {
      env: { ...process.env, ...vault.env },
      timeout: 60_000,
    }));
  } finally {
    during = answered - before;
    reading = false;
    await Promise.all(readers);
  }
  t.regex(stdout, /Backed up to/);
  t.is(statSync(backup).mode & 0o777, 0o600, 'as private as the database');
  t.true(during > 0, 'the vault kept answering reads while the backup ran');
  t.deepEqual(
    readdirSync(dir).filter((f) => f.includes('partial')),
    [],
    'nothing is left beside the backup',
  );

  // The copy is a consistent snapshot: a vault started on it finds its log intact.
  const { VAULT_PORT: _port, VAULT_DATA_DIR: _dir, ...settings } = vault.env;
  const restored = await spawnVault({ dataDir: join(dir, 'restored'), env: { ...settings, VAULT_DB: `sqlite:${backup}` } });
  t.teardown(() => restored.stop('SIGKILL'));
  const verify = await call(restored, 'GET', '/activity/verify');
  t.is(verify.body.data.valid, true);
  t.deepEqual(await readAll(restored, 20), expected(20));
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
  // With a password in the URL (trust authentication ignores it): it must reach neither the
  // command line, where `ps` shows it, nor an error.
  const password = `Pw${randomBytes(6).toString('hex')}`;
  const withPassword = new URL(source.url);
  withPassword.password = password;
  const env2 = { ...vault.env, VAULT_DB: withPassword.toString() };
  cli(['backup', '--to', backup], env2);
  t.is(statSync(backup).mode & 0o777, 0o600, 'a dump is as private as the database');
  const missing = new URL(withPassword);
  missing.pathname = `/no_such_database_${randomBytes(4).toString('hex')}`;
  const restoreInto = cli.bind(null, ['restore', '--from', backup]);
  for (const attempt of [
    () => cli(['backup', '--to', join(dir, 'y.dump')], { ...env2, VAULT_DB: missing.toString() }),
    () => restoreInto({ ...env2, VAULT_DB: missing.toString() }),
  ]) {
    const failed = t.throws(attempt) as Error & { status?: number; stderr?: string; stdout?: string };
    t.is(failed.status, 1);
    t.false(`${failed.message}${failed.stderr}${failed.stdout}`.includes(password), `the password is in no message: ${failed.stderr}`);
  }
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

/** Runs a verb expected to fail: its exit code and what it wrote to stderr. */
function failing(args: string[], env: Record<string, string>): { status?: number; stderr: string } {
  const err = (() => {
    try {
      cli(args, env);
    } catch (e) {
      return e as Error & { status?: number; stderr?: string };
    }
    throw new Error(`vault ${args.join(' ')} succeeded`);
  })();
  return { status: err.status, stderr: String(err.stderr).trim() };
}

test('backup and restore say what stands in their way: a directory that is not there, the other database, a database in use', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const dir = mkdtempSync(join(tmpdir(), 'vault-backup-refusals-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const password = `Pw${randomBytes(6).toString('hex')}`;
  const withPassword = new URL(database.url);
  withPassword.password = password;
  const indexKey = randomBytes(32).toString('base64');
  const onPostgres = { VAULT_DB: withPassword.toString(), VAULT_DATA_DIR: join(dir, 'pg'), VAULT_INDEX_KEY: indexKey };
  const onSqlite = { VAULT_DB: `sqlite:${join(dir, 'sqlite', 'vault.db')}`, VAULT_DATA_DIR: join(dir, 'sqlite'), VAULT_INDEX_KEY: indexKey };
  for (const env of [onPostgres, onSqlite]) cli(['migrate'], env);

  // Found before the vault is opened, on either database: no ENOENT from deep inside.
  const missing = join(dir, 'no-such-dir');
  for (const env of [onPostgres, onSqlite]) {
    t.deepEqual(failing(['backup', '--to', join(missing, 'vault.bak')], env), {
      status: 2,
      stderr: `--to: the directory ${missing} does not exist: create it first (nothing was backed up)`,
    });
  }
  t.deepEqual(failing(['backup', '--to', dir], onSqlite), { status: 2, stderr: `--to names a directory (${dir}): give the backup file's name in it` });
  t.deepEqual(failing(['restore', '--from', dir], onSqlite), { status: 2, stderr: '--from must name an existing backup file' });

  const dump = join(dir, 'vault.dump');
  const copy = join(dir, 'vault.db');
  cli(['backup', '--to', dump], onPostgres);
  cli(['backup', '--to', copy], onSqlite);
  t.deepEqual(failing(['restore', '--from', dump], onSqlite), {
    status: 1,
    stderr: `${dump} is a PostgreSQL backup, but VAULT_DB configures a SQLite vault: restore it into a vault on PostgreSQL; nothing was changed`,
  });
  t.deepEqual(failing(['restore', '--from', copy], onPostgres), {
    status: 1,
    stderr: `${copy} is a SQLite backup, but VAULT_DB configures a PostgreSQL vault: restore it into a vault on SQLite; nothing was changed`,
  });

  // Any other session on the database, a running vault's or not, stops the restore.
  const session = new pg.Client({ connectionString: database.url });
  await session.connect();
  const migrations = async () => (await session.query('select count(*)::int as n from kysely_migration')).rows[0].n as number;
  const applied = await migrations();
  const inUse = failing(['restore', '--from', dump], onPostgres);
  t.deepEqual(inUse, {
    status: 1,
    stderr: `${withPassword.toString().replace(password, '***')} has 1 other session connected (a running vault?): stop it before restoring; nothing was changed`,
  });
  t.false(inUse.stderr.includes(password));
  t.is(await migrations(), applied, 'the vault tables are still there');
  await session.end();
  t.regex(cli(['restore', '--from', dump], onPostgres), /^Restored /);
});

test('PostgreSQL: a session that reads during a restore waits until it has committed, then sees the backup whole', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const dir = mkdtempSync(join(tmpdir(), 'vault-pgrestore-exclusive-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const vault = await spawnVault({ env: { VAULT_DB: database.url, VAULT_INDEX_KEY: randomBytes(32).toString('base64') } });
  t.teardown(() => vault.dispose());
  await seed(vault, 10);
  const backup = join(dir, 'vault.dump');
  cli(['backup', '--to', backup], vault.env);
  for (let i = 10; i < 15; i++) {
    const res = await call(vault, 'POST', `/datasubjects/s${i}/attributes`, { data: [{ attribute: 'EMAIL', value: `later${i}@example.org` }] }, { 'x-encryption-key': vault.keys.publicKey });
    t.is(res.status, 200);
  }
  await vault.stop('SIGTERM');

  // A psql that holds the restore's transaction open at its very end, every statement run
  // and nothing committed, says so by a file, and goes on once the test lets it.
  const tools = join(dir, 'tools');
  mkdirSync(tools);
  const holding = join(dir, 'restored-uncommitted');
  const release = join(dir, 'release');
  t.teardown(() => writeFileSync(release, ''));
  const realPsql = execFileSync('sh', ['-c', 'command -v psql'], { encoding: 'utf8' }).trim();
  const hold = `touch '${holding}'; while [ ! -e '${release}' ]; do sleep 0.05; done`;
  writeFileSync(join(tools, 'psql'), `#!/bin/sh\n{ cat; printf '%s\\n' "\\\\! ${hold}"; } | exec '${realPsql}' "$@"\n`);
  chmodSync(join(tools, 'psql'), 0o755);
  const restoring = promisify(execFile)(process.execPath, [join(REPO_ROOT, 'core/bin/vault.mjs'), 'restore', '--from', backup], {
    env: { ...process.env, ...vault.env, PATH: `${tools}:${process.env.PATH}` },
  });
  let settled = false;
  void restoring.finally(() => (settled = true)).catch(() => {});
  while (!existsSync(holding)) {
    if (settled) return void t.fail(`the restore ended without holding its transaction open: ${JSON.stringify(await restoring.catch((e) => e.stderr))}`);
    await new Promise((r) => setTimeout(r, 20));
  }

  // Connected after the restore's check of other sessions: it is not refused, and waits.
  const reader = new pg.Client({ connectionString: database.url });
  const watcher = new pg.Client({ connectionString: database.url });
  await reader.connect();
  await watcher.connect();
  t.teardown(async () => {
    await reader.end();
    await watcher.end();
  });
  const pid = (await reader.query('select pg_backend_pid() as pid')).rows[0].pid;
  let answered = false;
  const read = reader.query('select count(*)::int as n from datapoints').finally(() => (answered = true));
  const waiting = async () => (await watcher.query('select exists (select 1 from pg_locks where pid = $1 and not granted) as waiting', [pid])).rows[0].waiting;
  while (!(await waiting())) {
    if (answered) return void t.fail(`the read was answered while the restore was uncommitted: ${JSON.stringify((await read).rows)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  t.false(answered);
  writeFileSync(release, '');
  t.is((await read).rows[0].n, 10, 'the backup’s ten values, none of the five stored after it, and no error');
  t.regex((await restoring).stdout, /^Restored /);
});
