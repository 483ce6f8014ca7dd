/**
 * The SQLite files hold no value in clear, but subjects' ids, the activity log and wrapped
 * keys: another user of the machine must not read them, whatever the umask.
 */
import test from 'ava';
import { sql } from 'kysely';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
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
