/**
 * The PostgreSQL client's transactions: BEGIN goes out with the transaction's first statement
 * (one round trip fewer), and what that saves must never let a statement run outside the
 * transaction it was meant for.
 */
import test from 'ava';
import { CompiledQuery, sql } from 'kysely';
import { createPostgresDatabase } from '../testing/harness.js';
import { connect, type DatabaseHandle } from './connect.js';

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
