import test from 'ava';
import { Kysely, sql, SqliteDialect } from 'kysely';
import SqliteDatabase from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterCommit } from './after-commit.js';
import { GROUP_BUDGET_MS, WriteGroup } from './write-group.js';
import type { Database } from './schema.js';

/** `budgetMs`: the writes' time budget; the tests of sharing give one no busy machine can use up. */
async function fixture(t: { teardown: (fn: () => void) => void }, budgetMs = 60_000) {
  const dir = mkdtempSync(join(tmpdir(), 'write-group-'));
  const sqlite = new SqliteDatabase(join(dir, 'db.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  const statements: string[] = [];
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log: (e) => void statements.push(e.query.sql) });
  await sql`create table parent (id text primary key)`.execute(db);
  // Checked at commit: an orphan makes the shared commit itself fail.
  await sql`create table child (id text primary key, parent text references parent (id) deferrable initially deferred)`.execute(db);
  t.teardown(() => {
    sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const ids = async () => (await sql<{ id: string }>`select id from parent order by id`.execute(db)).rows.map((r) => r.id);
  return { db, statements, ids, group: new WriteGroup(db, 'sqlite', { budgetMs }) };
}

test('writes that arrive together share one commit, and each is answered with its own result', async (t) => {
  const { statements, ids, group } = await fixture(t);
  statements.length = 0;
  const results = await Promise.all(
    ['a', 'b', 'c', 'd'].map((id) =>
      group.transaction(async (trx) => {
        await sql`insert into parent (id) values (${id})`.execute(trx);
        return `stored ${id}`;
      }),
    ),
  );
  t.deepEqual(results, ['stored a', 'stored b', 'stored c', 'stored d']);
  t.deepEqual(await ids(), ['a', 'b', 'c', 'd']);
  t.is(statements.filter((s) => s === 'commit').length, 1);
});

test('a write that fails rolls back alone: the others in its commit keep their rows', async (t) => {
  const { ids, group } = await fixture(t);
  const outcomes = await Promise.allSettled([
    group.transaction((trx) => sql`insert into parent (id) values ('kept-1')`.execute(trx)),
    group.transaction(async (trx) => {
      await sql`insert into parent (id) values ('undone')`.execute(trx);
      throw new Error('refused halfway');
    }),
    // A database error too: the duplicate key fails this write only.
    group.transaction(async (trx) => {
      await sql`insert into parent (id) values ('undone-too')`.execute(trx);
      await sql`insert into parent (id) values ('kept-1')`.execute(trx);
    }),
    group.transaction((trx) => sql`insert into parent (id) values ('kept-2')`.execute(trx)),
  ]);
  t.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
  );
  t.is((outcomes[1] as PromiseRejectedResult).reason.message, 'refused halfway');
  t.deepEqual(await ids(), ['kept-1', 'kept-2']);
});

test('when the shared commit fails, every write in it fails and none of them is kept', async (t) => {
  const { ids, group } = await fixture(t);
  const outcomes = await Promise.allSettled([
    group.transaction((trx) => sql`insert into parent (id) values ('innocent')`.execute(trx)),
    group.transaction((trx) => sql`insert into child (id, parent) values ('orphan', 'nobody')`.execute(trx)),
  ]);
  t.deepEqual(
    outcomes.map((o) => o.status),
    ['rejected', 'rejected'],
  );
  t.deepEqual(await ids(), []);
  // The group is usable afterwards.
  await group.transaction((trx) => sql`insert into parent (id) values ('later')`.execute(trx));
  t.deepEqual(await ids(), ['later']);
});

test('a long write does not hold the writes queued behind it past its own commit', async (t) => {
  const { statements, ids, group } = await fixture(t, GROUP_BUDGET_MS);
  statements.length = 0;
  const slow = (id: string) =>
    group.transaction(async (trx) => {
      await sql`insert into parent (id) values (${id})`.execute(trx);
      // A bulk of a thousand audit events, say.
      await new Promise((resolve) => setTimeout(resolve, 30));
      return id;
    });
  const answered: string[] = [];
  await Promise.all(['a', 'b', 'c'].map((id) => slow(id).then((v) => answered.push(v))));
  t.deepEqual(answered, ['a', 'b', 'c']);
  t.deepEqual(await ids(), ['a', 'b', 'c']);
  t.is(statements.filter((s) => s === 'commit').length, 3);
});

test('what a write leaves for after its commit runs once that commit is durable, before its answer, and never for a write that rolled back', async (t) => {
  const { group } = await fixture(t);
  const done: string[] = [];
  const note = (label: string) => void done.push(label);
  const answered: string[] = [];
  const write = (id: string, fail?: 'before' | 'after') =>
    group
      .transaction(async (trx) => {
        if (fail === 'before') throw new Error('refused before it did anything');
        await sql`insert into parent (id) values (${id})`.execute(trx);
        afterCommit(trx, note, id);
        if (fail === 'after') throw new Error('refused after it counted');
        return id;
      })
      .then((v) => {
        answered.push(v);
        t.true(done.includes(v), `${v} done before it is answered`);
      });
  const outcomes = await Promise.allSettled([write('a'), write('b', 'after'), write('c', 'before'), write('d')]);
  t.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
  );
  t.deepEqual(done, ['a', 'd'], 'the write rolled back to its savepoint left nothing');
  t.deepEqual(answered, ['a', 'd']);

  // A shared commit that fails: none of its writes committed, none of their work runs.
  done.length = 0;
  const failed = await Promise.allSettled([
    write('innocent'),
    group.transaction(async (trx) => {
      await sql`insert into child (id, parent) values ('orphan', 'nobody')`.execute(trx);
      afterCommit(trx, note, 'orphan');
    }),
  ]);
  t.deepEqual(
    failed.map((o) => o.status),
    ['rejected', 'rejected'],
  );
  t.deepEqual(done, []);
});
