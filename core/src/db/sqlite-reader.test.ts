/**
 * SQLite's reads: their statements share a read snapshot for one turn of the event loop (on
 * the writer's connection when it is free, else on the reader's), and that sharing must never
 * hide a commit made through the writer before a read, nor show a write transaction's rows
 * before its commit, nor keep another process's commit hidden past the turn, nor hold back a
 * checkpoint, nor hold back a write.
 */
import test from 'ava';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { connect, disconnect, type DatabaseHandle } from './connect.js';

let dir: string;
let handle: DatabaseHandle;
/** Another process's connection to the same file. */
let other: SqliteDatabase.Database;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vault-reader-'));
  const path = join(dir, 'vault.db');
  handle = connect({ url: `sqlite:${path}` });
  // The checkpoint thread would race this file's own checkpoint for SQLite's checkpoint lock
  // (a checkpoint that finds it taken answers busy at once); it has tests of its own.
  await handle.checkpointer?.stop();
  await sql`create table notes (id integer primary key)`.execute(handle.db);
  other = new SqliteDatabase(path);
});
test.after.always(async () => {
  other?.close();
  if (handle) await disconnect(handle);
  rmSync(dir, { recursive: true, force: true });
});

const ids = async () => (await sql<{ id: number }>`select id from notes order by id`.execute(handle.reader)).rows.map((r) => r.id);

test.serial('a read sees what the writer committed just before it, in the same turn', async (t) => {
  t.deepEqual(await ids(), []);
  // The snapshot the read above opened is still this turn's; each write must end it.
  await handle.db.transaction().execute((trx) => sql`insert into notes values (1)`.execute(trx));
  t.deepEqual(await ids(), [1]);
  await sql`insert into notes values (2)`.execute(handle.db);
  t.deepEqual(await ids(), [1, 2]);
  await handle.db.transaction().execute((trx) => sql`delete from notes where id = 1`.execute(trx));
  t.deepEqual(await ids(), [2]);
});

test.serial("another process's commit is seen from the next turn on", async (t) => {
  t.deepEqual(await ids(), [2]);
  other.prepare('insert into notes values (3)').run();
  // Reads within one turn share the snapshot the first of them took...
  t.deepEqual(await ids(), [2]);
  await nextTurn();
  // ...but never after it.
  t.deepEqual(await ids(), [2, 3]);
});

test.serial('the snapshot ends with the turn, so a checkpoint can take the whole log', async (t) => {
  await sql`insert into notes values (4)`.execute(handle.db);
  t.deepEqual(await ids(), [2, 3, 4]);
  await nextTurn();
  await nextTurn();
  // A reader still inside its snapshot would keep the log's last frames from being copied.
  const [result] = handle.sqlite!.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
  t.is(result.busy, 0);
  t.is(result.log, 0);
});

test.serial('reads arriving together are each answered with their own rows', async (t) => {
  const answers = await Promise.all(
    Array.from({ length: 64 }, (_, i) => sql<{ id: number; n: number }>`select id, ${i} as n from notes where id >= ${i % 5} order by id`.execute(handle.reader)),
  );
  answers.forEach((answer, i) => {
    t.deepEqual(
      answer.rows.map((r) => r.id),
      [2, 3, 4].filter((id) => id >= i % 5),
    );
    t.true(answer.rows.every((r) => r.n === i));
  });
});

test.serial('the reader runs no transactions, so none can be interleaved with other reads', async (t) => {
  await t.throwsAsync(handle.reader.transaction().execute(async () => undefined), { message: /runs no transactions/ });
  t.deepEqual(await ids(), [2, 3, 4]);
});

test.serial("a read while a write transaction is open does not see its rows until it commits, nor waits for it", async (t) => {
  let seenInside: number[] = [];
  await handle.db.transaction().execute(async (trx) => {
    await sql`insert into notes values (5)`.execute(trx);
    seenInside = await ids();
  });
  t.deepEqual(seenInside, [2, 3, 4]);
  t.deepEqual(await ids(), [2, 3, 4, 5]);
});

test.serial('a write right after a read of the same turn commits at once, for other processes too', async (t) => {
  t.deepEqual(await ids(), [2, 3, 4, 5]);
  // Without a transaction of its own: were it run inside the read's snapshot, it would not
  // commit before the turn ends.
  await sql`insert into notes values (6)`.execute(handle.db);
  t.deepEqual(
    other.prepare('select id from notes order by id').all().map((r) => (r as { id: number }).id),
    [2, 3, 4, 5, 6],
  );
  t.deepEqual(await ids(), [2, 3, 4, 5, 6]);
});

test.serial('a write transaction whose statement fails leaves the writer free for the next read and write', async (t) => {
  await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`insert into notes values (7)`.execute(trx);
      t.deepEqual(await ids(), [2, 3, 4, 5, 6]);
      await sql`insert into notes values (2)`.execute(trx);
    }),
    { any: true, message: /UNIQUE/ },
  );
  t.deepEqual(await ids(), [2, 3, 4, 5, 6]);
  await handle.db.transaction().execute((trx) => sql`insert into notes values (7)`.execute(trx));
  t.deepEqual(await ids(), [2, 3, 4, 5, 6, 7]);
});
