/**
 * PostgreSQL that stops answering: a statement or a connection gives up after its timeout
 * instead of waiting forever, migrations alone may run longer, and every way a connection is
 * lost reads as `unreachable` (a 503 a client may retry), while a statement's own failure
 * does not.
 */
import test from 'ava';
import { sql } from 'kysely';
import pg from 'pg';
import { createPostgresDatabase } from '../testing/harness.js';
import { closedPort } from '../testing/process.js';
import { startRelay } from '../testing/relay.js';
import { connect, disconnect, type DatabaseHandle } from './connect.js';
import { storageFailure } from './dialect.js';

let url: string;
let drop: () => Promise<void>;
test.before(async () => {
  ({ url, drop } = await createPostgresDatabase());
});
test.after.always(async () => drop?.());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function failureOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

async function opened(t: any, options: Partial<Parameters<typeof connect>[0]>): Promise<DatabaseHandle> {
  const handle = connect({ url, poolSize: 2, ...options });
  t.teardown(() => disconnect(handle));
  return handle;
}

test('a statement unanswered past the statement timeout fails as unreachable; migrations have a connection without it', async (t) => {
  const handle = await opened(t, { statementTimeoutMs: 300 });
  const err = await failureOf(() => sql`select pg_sleep(2)`.execute(handle.db));
  t.is(storageFailure(err), 'unreachable', String(err));
  // The pool goes on with a new connection.
  t.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(handle.db)).rows, [{ one: 1 }]);

  const unbounded = handle.unbounded!();
  t.teardown(() => unbounded.destroy());
  await t.notThrowsAsync(sql`select pg_sleep(0.6)`.execute(unbounded));
});

test('statements a partition held back are not run when the network returns, once their timeout has failed them', async (t) => {
  const direct = await opened(t, {});
  await sql`create table late (id int)`.execute(direct.db);
  const relay = await startRelay(5432);
  t.teardown(() => relay.close());
  const relayed = await opened(t, { url: relay.through(url), statementTimeoutMs: 300, poolSize: 1 });

  // On its own (autocommit), as the reads' activity records are written.
  await sql`select 1`.execute(relayed.db);
  relay.partition();
  t.is(storageFailure(await failureOf(() => sql`insert into late values (1)`.execute(relayed.db))), 'unreachable');
  // TCP rides out a short partition: what the client left queued would arrive once it ends.
  await sleep(100);
  relay.resume();

  // A transaction's COMMIT.
  const err = await failureOf(() =>
    relayed.db.transaction().execute(async (trx) => {
      await sql`insert into late values (2)`.execute(trx);
      relay.partition();
    }),
  );
  t.is(storageFailure(err), 'unreachable', String(err));
  await sleep(100);
  relay.resume();

  await sleep(500);
  t.deepEqual((await sql`select id from late`.execute(direct.db)).rows, [], 'both requests were answered 503: nothing of them may commit');
  t.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(relayed.db)).rows, [{ one: 1 }], 'and the pool goes on');
});

test('sessions ask the server to end them when left idle inside a transaction past the statement timeout; without a timeout they do not', async (t) => {
  const handle = await opened(t, { statementTimeoutMs: 1500 });
  t.deepEqual((await sql<{ idle_in_transaction_session_timeout: string }>`show idle_in_transaction_session_timeout`.execute(handle.db)).rows, [
    { idle_in_transaction_session_timeout: '1500ms' },
  ]);
  const without = await opened(t, { statementTimeoutMs: 0 });
  t.deepEqual((await sql<{ idle_in_transaction_session_timeout: string }>`show idle_in_transaction_session_timeout`.execute(without.db)).rows, [
    { idle_in_transaction_session_timeout: '0' },
  ]);
});

test('connections refused, cut, or not made within the connect timeout fail as unreachable', async (t) => {
  const nowhere = `postgres://postgres@127.0.0.1:${await closedPort()}/postgres`;
  const refused = connect({ url: nowhere, poolSize: 1, connectTimeoutMs: 1000 });
  t.teardown(() => disconnect(refused));
  t.is(storageFailure(await failureOf(() => sql`select 1`.execute(refused.db))), 'unreachable');

  const relay = await startRelay(5432);
  t.teardown(() => relay.close());
  const relayed = await opened(t, { url: relay.through(url), connectTimeoutMs: 300, poolSize: 1 });
  relay.partition();
  t.is(storageFailure(await failureOf(() => sql`select 1`.execute(relayed.db))), 'unreachable');
  relay.heal();
  t.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(relayed.db)).rows, [{ one: 1 }]);

  // A session the server ends (an administrator, a restart): SQLSTATE 57P01.
  const handle = await opened(t, {});
  const err = await failureOf(() =>
    handle.db.connection().execute(async (db) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query('select pg_terminate_backend($1)', [rows[0].pid]);
      await admin.end();
      await sql`select 1`.execute(db);
    }),
  );
  t.is(storageFailure(err), 'unreachable', String(err));
});

test('a server that takes no writes (a standby during a failover) fails writes as unreachable', async (t) => {
  const handle = await opened(t, { poolSize: 1 });
  await sql`create table if not exists notes (id int)`.execute(handle.db);
  await sql`set default_transaction_read_only = on`.execute(handle.db);
  t.is(storageFailure(await failureOf(() => sql`insert into notes values (1)`.execute(handle.db))), 'unreachable');
});

test("a statement's own failure is not an outage", async (t) => {
  const handle = await opened(t, {});
  t.is(storageFailure(await failureOf(() => sql`select * from no_such_table`.execute(handle.db))), undefined);
  t.is(storageFailure(await failureOf(() => sql`select 1/0`.execute(handle.db))), undefined);
});
