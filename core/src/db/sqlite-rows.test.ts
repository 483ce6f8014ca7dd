/**
 * SQLite rows are fetched as arrays and made objects by a function compiled per statement
 * (see `rowsFromArrays` in sqlite.ts). What callers get must stay what better-sqlite3's own
 * row objects were, on the writer and on the reader, before and after the schema changes.
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
let path: string;
let handle: DatabaseHandle;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vault-rows-'));
  path = join(dir, 'vault.db');
  handle = connect({ url: `sqlite:${path}` });
  await handle.checkpointer?.stop();
  await sql`create table people (id integer primary key, name text, photo blob, score real)`.execute(handle.db);
  await sql`insert into people (id, name, photo, score) values (1, 'Ada', x'0102', 1.5), (2, null, null, null)`.execute(handle.db);
});
test.after.always(async () => {
  if (handle) await disconnect(handle);
  rmSync(dir, { recursive: true, force: true });
});

const QUERY = 'select id, name, photo, score, id as name, 7 as "with space" from people order by id';

/** The same select through a plain better-sqlite3 connection: the rows as they used to come. */
function plainRows(text: string): unknown[] {
  const plain = new SqliteDatabase(path, { readonly: true });
  try {
    return plain.prepare(text).all();
  } finally {
    plain.close();
  }
}

for (const side of ['writer', 'reader'] as const) {
  test.serial(`the ${side}'s rows are better-sqlite3's rows: names, types, nulls, a repeated name`, async (t) => {
    const executor = side === 'writer' ? handle.db : handle.reader;
    // Twice: the first run prepares and keeps the statement, the second uses what was kept.
    for (let run = 0; run < 2; run++) {
      const { rows } = await sql.raw(QUERY).execute(executor);
      t.deepEqual(rows, plainRows(QUERY));
      t.deepEqual(Object.keys(rows[0] as object), ['id', 'name', 'photo', 'score', 'with space']);
      t.is((rows[0] as { name: unknown }).name, 1, 'the later column of a repeated name wins');
      t.true(Buffer.isBuffer((rows[0] as { photo: unknown }).photo));
    }
  });
}

test.serial('a column named __proto__ is a value, not the row prototype', async (t) => {
  const { rows } = await sql.raw(`select id, null as "__proto__" from people where id = 1`).execute(handle.reader);
  t.is(Object.getPrototypeOf(rows[0]), Object.prototype);
  t.is((rows[0] as { id: number }).id, 1);
});

test.serial('a kept "select *" answers the columns another connection added since', async (t) => {
  const star = 'select * from people where id = 1';
  t.deepEqual(Object.keys((await sql.raw(star).execute(handle.reader)).rows[0] as object), ['id', 'name', 'photo', 'score']);
  const other = new SqliteDatabase(path);
  other.exec(`alter table people add column nickname text default 'Countess'`);
  other.close();
  // The reader's snapshot of this turn predates the change.
  await nextTurn();
  const { rows } = await sql.raw(star).execute(handle.reader);
  t.deepEqual(rows, plainRows(star));
  t.is((rows[0] as { nickname: unknown }).nickname, 'Countess');
});
