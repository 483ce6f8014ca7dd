/**
 * The SQLite files hold no value in clear, but subjects' ids, the activity log and wrapped
 * keys: another user of the machine must not read them, whatever the umask.
 */
import test from 'ava';
import { sql } from 'kysely';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import SqliteDatabase from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, disconnect } from './connect.js';

const mode = (path: string) => statSync(path).mode & 0o777;

test('a new database, its log and the directory made for it are readable by their owner only', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vault-files-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const path = join(root, 'nested', 'vault.db');
  const previous = process.umask(0o022);
  t.teardown(() => void process.umask(previous));
  const handle = connect({ url: `sqlite:${path}` });
  t.teardown(() => disconnect(handle));
  await sql`create table notes (id integer primary key)`.execute(handle.db);
  await handle.db.transaction().execute((trx) => sql`insert into notes values (1)`.execute(trx));

  t.is(mode(join(root, 'nested')), 0o700);
  t.is(mode(path), 0o600);
  t.is(mode(`${path}-wal`), 0o600);
  t.is(mode(`${path}-shm`), 0o600);
});

test('a database an older release left readable by others, its log too, is made private on open, and said so', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vault-files-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const shared = join(root, 'shared');
  mkdirSync(shared, { mode: 0o755 });
  chmodSync(shared, 0o755);
  const path = join(shared, 'vault.db');
  // An older release's files, its log still there (a process has the file open).
  const older = new SqliteDatabase(path);
  t.teardown(() => older.close());
  older.pragma('journal_mode = WAL');
  older.exec('create table notes (id integer primary key); insert into notes values (1)');
  for (const file of [path, `${path}-wal`, `${path}-shm`]) chmodSync(file, 0o644);

  const told: string[][] = [];
  const handle = connect({ url: `sqlite:${path}`, onModesTightened: (changes) => told.push(changes) });
  await disconnect(handle);
  t.deepEqual(told, [[`${path} 0644 -> 0600`, `${path}-wal 0644 -> 0600`, `${path}-shm 0644 -> 0600`]]);
  for (const file of [path, `${path}-wal`, `${path}-shm`]) t.is(mode(file), 0o600, file);
  t.is(mode(shared), 0o755, 'a directory the vault did not make is not its to change');

  const again = connect({ url: `sqlite:${path}`, onModesTightened: (changes) => told.push(changes) });
  await disconnect(again);
  t.is(told.length, 1, 'nothing to say once they are private');
});
