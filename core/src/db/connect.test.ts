/**
 * The PostgreSQL client's transactions: BEGIN goes out with the transaction's first statement
 * (one round trip fewer), and what that saves must never let a statement run outside the
 * transaction it was meant for.
 */
import test from 'ava';
import { CompiledQuery, sql } from 'kysely';
import { createPostgresDatabase } from '../testing/harness.js';
import { countSocketWrites } from '../testing/wire.js';
import { connect, THEN_COMMIT, type DatabaseHandle } from './connect.js';

let handle: DatabaseHandle;
let drop: () => Promise<void>;
test.before(async () => {
  const database = await createPostgresDatabase();
  drop = database.drop;
  handle = connect({ url: database.url, poolSize: 2 });
  await sql`create table notes (id int primary key)`.execute(handle.db);
});
test.after.always(async () => {
  await handle?.db.destroy();
  await drop?.();
});

const count = async () => Number((await sql<{ n: string }>`select count(*) as n from notes`.execute(handle.db)).rows[0].n);

test.serial('transactions commit and roll back as a whole', async (t) => {
  await handle.db.transaction().execute(async (trx) => {
    const before = await sql<{ n: string }>`select count(*) as n from notes where id in (1, 2)`.execute(trx);
    t.is(Number(before.rows[0].n), 0);
    await sql`insert into notes values (1)`.execute(trx);
    await sql`insert into notes values (2)`.execute(trx);
  });
  await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`insert into notes values (3)`.execute(trx);
      await sql`insert into notes values (1)`.execute(trx);
    }),
  );
  t.deepEqual((await sql<{ id: number }>`select id from notes order by id`.execute(handle.db)).rows, [{ id: 1 }, { id: 2 }]);
  await handle.db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
    t.is(Number((await sql<{ n: string }>`select count(*) as n from notes`.execute(trx)).rows[0].n), 2);
  });
});

test.serial('a BEGIN that fails fails the read sent with it, and a write after it is never sent', async (t) => {
  const before = await count();
  await handle.db.connection().execute(async (conn) => {
    // Answered at once: its own answer comes with the next statement's.
    await conn.executeQuery(CompiledQuery.raw('start transaction isolation level no_such_level'));
    await t.throwsAsync(conn.executeQuery(CompiledQuery.raw('select 1 as one')), { message: /syntax error|no_such_level/ });
    await conn.executeQuery(CompiledQuery.raw('start transaction isolation level no_such_level'));
    await t.throwsAsync(conn.executeQuery(CompiledQuery.raw('insert into notes values (100)')), { message: /syntax error|no_such_level/ });
    // The way out of a transaction that never began is still open.
    await conn.executeQuery(CompiledQuery.raw('start transaction isolation level no_such_level'));
    await t.notThrowsAsync(conn.executeQuery(CompiledQuery.raw('rollback')));
    const after = await conn.executeQuery<{ one: number }>(CompiledQuery.raw('select 1 as one'));
    t.deepEqual(after.rows, [{ one: 1 }], 'the connection is usable afterwards');
  });
  t.is(await count(), before, 'the insert did not run outside a transaction');
});

const lastly = (text: string) => CompiledQuery.raw(THEN_COMMIT + text);

test.serial('a last statement takes the COMMIT along: what it wrote is committed with the rest', async (t) => {
  await sql`create table if not exists lasts (id int primary key, n int)`.execute(handle.db);
  await handle.db.transaction().execute(async (trx) => {
    await sql`select 1`.execute(trx);
    await sql`insert into lasts values (1, 1)`.execute(trx);
    await trx.executeQuery(lastly('insert into lasts values (2, 2)'));
  });
  t.deepEqual((await sql<{ id: number }>`select id from lasts order by id`.execute(handle.db)).rows, [{ id: 1 }, { id: 2 }]);
});

test.serial('a last statement that fails takes its whole transaction with it, and the connection stays usable', async (t) => {
  await sql`create table if not exists failing (id int primary key)`.execute(handle.db);
  await sql`insert into failing values (1)`.execute(handle.db);
  await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      await sql`insert into failing values (2)`.execute(trx);
      await trx.executeQuery(lastly('insert into failing values (1)'));
    }),
    { message: /duplicate key/ },
  );
  t.deepEqual((await sql<{ id: number }>`select id from failing order by id`.execute(handle.db)).rows, [{ id: 1 }], 'nothing of it was kept');
  // Both connections of the pool are used again, in and out of transactions.
  await Promise.all([1, 2].map((i) => handle.db.transaction().execute((trx) => sql`insert into failing values (${10 + i})`.execute(trx))));
  t.is((await sql<{ id: number }>`select id from failing`.execute(handle.db)).rows.length, 3);
});

test.serial('a COMMIT that fails after its last statement succeeded fails the transaction', async (t) => {
  await sql`create table if not exists deferred (id int, constraint deferred_once unique (id) deferrable initially deferred)`.execute(handle.db);
  await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      await sql`insert into deferred values (7)`.execute(trx);
      // Accepted here; the unique check runs at COMMIT.
      await trx.executeQuery(lastly('insert into deferred values (7)'));
    }),
    { message: /deferred_once/ },
  );
  t.is((await sql`select id from deferred`.execute(handle.db)).rows.length, 0);
});

test.serial('nothing passes for rolled back once the last statement committed', async (t) => {
  await sql`create table if not exists broken (id int primary key)`.execute(handle.db);
  await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      await trx.executeQuery(lastly('insert into broken values (1)'));
      await sql`insert into broken values (2)`.execute(trx);
    }),
    { message: /already committed|after the one that committed/ },
  );
  t.deepEqual((await sql<{ id: number }>`select id from broken`.execute(handle.db)).rows, [{ id: 1 }], 'the statement after it never ran');
});

test.serial('a last statement whose failure was caught still does not pass for committed', async (t) => {
  await sql`create table if not exists swallowed (id int primary key)`.execute(handle.db);
  await sql`insert into swallowed values (1)`.execute(handle.db);
  await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      await sql`insert into swallowed values (2)`.execute(trx);
      await trx.executeQuery(lastly('insert into swallowed values (1)')).catch(() => undefined);
    }),
    { message: /rolled back/ },
  );
  t.is((await sql`select id from swallowed`.execute(handle.db)).rows.length, 1);
});

test.serial('a COMMIT after a failure that was caught is not taken for a commit', async (t) => {
  await sql`create table if not exists caught (id int primary key)`.execute(handle.db);
  await sql`insert into caught values (1)`.execute(handle.db);
  // PostgreSQL answers this COMMIT with ROLLBACK, not with an error.
  const err = await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`insert into caught values (2)`.execute(trx);
      await sql`insert into caught values (1)`.execute(trx).catch(() => undefined);
    }),
  );
  t.like(err, { message: 'the transaction was rolled back', code: '40000' });
  t.is((await sql`select id from caught`.execute(handle.db)).rows.length, 1);
});

test.serial('statements sent in one turn leave in one socket write', async (t) => {
  await handle.db.connection().execute(async (conn) => {
    // Kysely runs a connection's statements one at a time; its executor hands them over together.
    const { result: answers, writes } = await countSocketWrites(() =>
      conn.getExecutor().provideConnection((c) => Promise.all([1, 2, 3, 4].map((n) => c.executeQuery<{ n: number }>(CompiledQuery.raw(`select ${n} as n`))))),
    );
    t.deepEqual(
      answers.map((a) => a.rows[0].n),
      [1, 2, 3, 4],
    );
    t.is(writes, 1);
  });
});
