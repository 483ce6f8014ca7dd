/**
 * SQLite's log is checkpointed by a thread of its own: the pages a commit appends to the log
 * reach the database file without the writer (the event loop) copying them, and the thread
 * stops cleanly with the connections.
 */
import test from 'ava';
import { sql } from 'kysely';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, disconnect } from './connect.js';
import { WalCheckpointer } from './checkpointer.js';

function tempDir(t: { teardown: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'vault-checkpoint-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

test('committed pages reach the database file while the writer never checkpoints', async (t) => {
  const path = join(tempDir(t), 'vault.db');
  const handle = connect({ url: `sqlite:${path}`, sqliteCacheMb: 8 });
  t.teardown(() => disconnect(handle));
  t.truthy(handle.checkpointer);
  // The writer would checkpoint only past this many pages; the test writes far fewer.
  t.is(handle.sqlite!.pragma('wal_autocheckpoint', { simple: true }), 16384);

  await sql`create table notes (id integer primary key, body text not null)`.execute(handle.db);
  const before = statSync(path).size;
  const body = 'x'.repeat(1000);
  await handle.db.transaction().execute(async (trx) => {
    for (let i = 0; i < 400; i++) await sql`insert into notes (body) values (${body})`.execute(trx);
  });
  // About 100 pages of 4 KiB: in the log until a checkpoint copies them into the file.
  t.true(await until(() => statSync(path).size >= before + 300 * 1024), `file stayed at ${statSync(path).size} bytes`);
  t.true(await until(() => handle.checkpointer!.stats().checkpoints >= 1));
  const stats = handle.checkpointer!.stats();
  t.true(stats.walPages >= 100);
  t.is(stats.copiedPages, stats.walPages);
  // What the file holds is what was committed.
  const rows = await sql<{ n: number }>`select count(*) as n from notes`.execute(handle.reader);
  t.is(rows.rows[0].n, 400);
});

test('stopping the thread leaves the log to the writer and closes cleanly', async (t) => {
  const path = join(tempDir(t), 'vault.db');
  const handle = connect({ url: `sqlite:${path}` });
  await sql`create table notes (id integer primary key)`.execute(handle.db);
  await handle.checkpointer!.stop();
  const checkpoints = handle.checkpointer!.stats().checkpoints;
  await sql`insert into notes values (1)`.execute(handle.db);
  await sleep(300);
  t.is(handle.checkpointer!.stats().checkpoints, checkpoints);
  // Stopping twice, as disconnect does after a stop, is harmless.
  await disconnect(handle);
  t.pass();
});

test('a thread that cannot open the database reports it', async (t) => {
  const dir = tempDir(t);
  const errors: Error[] = [];
  const checkpointer = new WalCheckpointer(join(dir, 'missing', 'vault.db'), { onError: (err) => errors.push(err) });
  await checkpointer.stop();
  t.is(errors.length, 1);
  t.regex(errors[0].message, /unable to open|directory does not exist|does not exist/i);
});

test('an in-memory database has no log to checkpoint', (t) => {
  const handle = connect({ url: 'sqlite::memory:' });
  t.teardown(() => disconnect(handle));
  t.is(handle.checkpointer, undefined);
});
