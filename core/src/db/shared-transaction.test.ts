/**
 * Writes sharing a PostgreSQL transaction (`SharedTransactions`): each must end exactly as it
 * would have in a transaction of its own (committed with its result, or failed with its error
 * and nothing kept), while those that arrive together cost one transaction and few socket writes.
 */
import test from 'ava';
import { sql, type Transaction } from 'kysely';
import pg from 'pg';
import { forbidden } from '../errors.js';
import { createPostgresDatabase } from '../testing/harness.js';
import { countSocketWrites } from '../testing/wire.js';
import { afterCommit, committed, DEADLOCK_ATTEMPTS } from './after-commit.js';
import { connect, THEN_COMMIT, type DatabaseHandle } from './connect.js';
import { storageFailure } from './dialect.js';
import type { Database } from './schema.js';
import { SharedTransactions } from './shared-transaction.js';

let handle: DatabaseHandle;
let drop: () => Promise<void>;
test.before(async () => {
  const database = await createPostgresDatabase();
  drop = database.drop;
  handle = connect({ url: database.url, poolSize: 6 });
  await sql`create table things (id text primary key, owner text)`.execute(handle.db);
  // Checked at COMMIT: an orphan makes the commit itself fail.
  await sql`create table parts (id text primary key, thing text references things (id) deferrable initially deferred)`.execute(handle.db);
  // A constraint trigger that runs at COMMIT and waits there when asked to.
  await sql`create table slow (id text primary key)`.execute(handle.db);
  await sql`create function slow_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(3); return null; end $$`.execute(handle.db);
  await sql`create constraint trigger slow_commit after insert on slow deferrable initially deferred for each row execute function slow_commit()`.execute(handle.db);
});
test.after.always(async () => {
  await handle?.db.destroy();
  await drop?.();
});

const rows = async (table: 'things' | 'parts', prefix: string) =>
  (await sql<{ id: string }>`select id from ${sql.table(table)} where id like ${`${prefix}%`} order by id`.execute(handle.db)).rows.map((r) => r.id);

/** A write as a store makes one: a locking read, then its last statement with the COMMIT marker. */
const insertThing = (id: string, runs?: Map<string, number>) => async (trx: Transaction<Database>) => {
  runs?.set(id, (runs.get(id) ?? 0) + 1);
  const { rows: [tx] } = await sql<{ tx: string }>`select txid_current()::text as tx`.execute(trx);
  await sql.raw(`${THEN_COMMIT}insert into things (id, owner) values ('${id}', 'test')`).execute(trx);
  return tx.tx;
};

/** Counts BEGINs and COMMITs sent, and socket writes made, while `during` runs. */
async function onTheWire<T>(during: () => Promise<T>): Promise<{ result: T; begins: number; commits: number; writes: number }> {
  const query = pg.Client.prototype.query;
  let begins = 0;
  let commits = 0;
  pg.Client.prototype.query = function (this: pg.Client, config: any, ...rest: any[]) {
    if (config === 'begin') begins++;
    if (config === 'commit') commits++;
    return (query as any).call(this, config, ...rest);
  } as typeof query;
  try {
    return { ...(await countSocketWrites(during)), begins, commits };
  } finally {
    pg.Client.prototype.query = query;
  }
}

test.serial('writes of different entities that arrive together share one transaction, one commit and few socket writes', async (t) => {
  const shared = new SharedTransactions(handle.db, { groupSize: 32 });
  const ids = Array.from({ length: 8 }, (_, i) => `together-${i}`);
  // The pool's connections are open already: only the group's own writes are counted.
  await Promise.all(Array.from({ length: 6 }, () => sql`select 1`.execute(handle.db)));
  const { result: txids, begins, commits, writes } = await onTheWire(() => Promise.all(ids.map((id) => shared.run(id, insertThing(id)))));
  t.is(new Set(txids).size, 1, 'one transaction');
  t.is(begins, 1);
  t.is(commits, 1);
  // 18 statements (BEGIN, 8 reads, 8 inserts, COMMIT). BEGIN and the reads leave in one write;
  // each insert leaves when its read's answer arrives, with the COMMIT behind the last. That is
  // two writes when the answers come back in one piece and nine when each comes alone (the
  // server and the loopback decide which); one write per statement would be 18. A loaded
  // machine has shown ten (the BEGIN's write leaving before the last read joined it).
  t.true(writes <= 12, `${writes} socket writes`);
  t.deepEqual(await rows('things', 'together-'), ids);
});

test.serial('writes of one entity never share a transaction, and run in the order they came', async (t) => {
  const shared = new SharedTransactions(handle.db);
  const order: string[] = [];
  const work = (label: string) => async (trx: Transaction<Database>) => {
    const { rows: [tx] } = await sql<{ tx: string }>`select txid_current()::text as tx`.execute(trx);
    order.push(label);
    await sql.raw(`${THEN_COMMIT}insert into things (id, owner) values ('same-${label}', 'same')`).execute(trx);
    return tx.tx;
  };
  const [first, second, other] = await Promise.all([shared.run('entity-a', work('1')), shared.run('entity-a', work('2')), shared.run('entity-b', work('b'))]);
  t.not(first, second);
  t.is(first, other, 'another entity shares the first one’s transaction');
  t.deepEqual(order.filter((l) => l !== 'b'), ['1', '2']);
});

test.serial('a write that fails keeps nothing, and the others of its transaction commit with their results', async (t) => {
  const shared = new SharedTransactions(handle.db);
  const runs = new Map<string, number>();
  const outcomes = await Promise.allSettled([
    shared.run('f-1', insertThing('fail-kept-1', runs)),
    shared.run('f-2', async (trx) => {
      runs.set('fail-undone', (runs.get('fail-undone') ?? 0) + 1);
      await sql`insert into things (id, owner) values ('fail-undone', 'test')`.execute(trx);
      throw new Error('refused halfway');
    }),
    // A database error too: a duplicate key.
    shared.run('f-3', async (trx) => {
      await sql`insert into things (id, owner) values ('fail-undone-too', 'test')`.execute(trx);
      await sql`insert into things (id, owner) values ('together-0', 'test')`.execute(trx);
    }),
    shared.run('f-4', insertThing('fail-kept-2', runs)),
  ]);
  t.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
  );
  t.is((outcomes[1] as PromiseRejectedResult).reason.message, 'refused halfway');
  t.is((outcomes[2] as PromiseRejectedResult).reason.code, '23505');
  t.deepEqual(await rows('things', 'fail-'), ['fail-kept-1', 'fail-kept-2']);
  t.is(runs.get('fail-undone'), 2, 'the failing write ran again alone, and failed again');
});

test.serial('a write that refuses itself (a VaultError) is not run again: what it did outside the transaction happens once', async (t) => {
  const shared = new SharedTransactions(handle.db);
  const runs = new Map<string, number>();
  const outcomes = await Promise.allSettled([
    shared.run('r-1', insertThing('refusal-kept-1', runs)),
    shared.run('r-2', async (trx) => {
      runs.set('refusal', (runs.get('refusal') ?? 0) + 1);
      await sql`insert into things (id, owner) values ('refusal-undone', 'test')`.execute(trx);
      throw forbidden('Blocked by rule');
    }),
    shared.run('r-3', insertThing('refusal-kept-2', runs)),
  ]);
  t.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.like((outcomes[1] as PromiseRejectedResult).reason, { status: 403, message: 'Blocked by rule' });
  t.is(runs.get('refusal'), 1);
  t.deepEqual(await rows('things', 'refusal-'), ['refusal-kept-1', 'refusal-kept-2']);
});

test.serial('a COMMIT the server refuses runs each write again alone: only the faulty one fails', async (t) => {
  const shared = new SharedTransactions(handle.db);
  const outcomes = await Promise.allSettled([
    shared.run('c-1', insertThing('commit-kept-1')),
    shared.run('c-2', (trx) => sql.raw(`${THEN_COMMIT}insert into parts (id, thing) values ('commit-orphan', 'no such thing')`).execute(trx)),
    shared.run('c-3', insertThing('commit-kept-2')),
  ]);
  t.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.is((outcomes[1] as PromiseRejectedResult).reason.code, '23503');
  t.deepEqual(await rows('things', 'commit-'), ['commit-kept-1', 'commit-kept-2']);
  t.deepEqual(await rows('parts', 'commit-'), []);
});

test.serial('what a write leaves for after its commit runs once, for the run that committed: never for a group that rolled back', async (t) => {
  const shared = new SharedTransactions(handle.db);
  const runs = new Map<string, number>();
  const done: string[] = [];
  const note = (label: string) => void done.push(label);
  const counted = (id: string) => async (trx: Transaction<Database>) => {
    const tx = await insertThing(id, runs)(trx);
    afterCommit(trx, note, id);
    t.false(done.includes(id), 'not before the commit');
    return tx;
  };
  const orphan = async (trx: Transaction<Database>) => {
    afterCommit(trx, note, 'after-orphan');
    await sql.raw(`${THEN_COMMIT}insert into parts (id, thing) values ('after-orphan', 'no such thing')`).execute(trx);
  };
  const refusal = async (trx: Transaction<Database>) => {
    afterCommit(trx, note, 'after-refused');
    throw forbidden('Blocked by rule');
  };

  // The server refuses the group's COMMIT: every write runs again alone, the orphan fails again.
  const refusedCommit = await Promise.allSettled([shared.run('a-1', counted('after-commit-1')), shared.run('a-2', orphan), shared.run('a-3', counted('after-commit-2'))]);
  t.deepEqual(
    refusedCommit.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  // A write refuses itself: the group rolls back, the refusal stands, the others run again alone.
  const refusedWrite = await Promise.allSettled([shared.run('b-1', counted('after-refusal-1')), shared.run('b-2', refusal), shared.run('b-3', counted('after-refusal-2'))]);
  t.deepEqual(
    refusedWrite.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  const kept = ['after-commit-1', 'after-commit-2', 'after-refusal-1', 'after-refusal-2'];
  t.deepEqual(
    kept.map((id) => runs.get(id)),
    [2, 2, 2, 2],
    'each ran in its group, then again alone',
  );
  t.deepEqual(done.sort(), kept);
  t.deepEqual(await rows('things', 'after-'), kept);

  // A group that commits does each write's work once.
  done.length = 0;
  await Promise.all([shared.run('c-1', counted('after-group-1')), shared.run('c-2', counted('after-group-2'))]);
  t.deepEqual(done.sort(), ['after-group-1', 'after-group-2']);
  t.is(runs.get('after-group-1'), 1);
});

test.serial('a write that sends a statement after its last is refused it, and never lets COMMIT out before the others are done', async (t) => {
  const shared = new SharedTransactions(handle.db);
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const outcomes = Promise.allSettled([
    shared.run('l-1', async (trx) => {
      await sql.raw(`${THEN_COMMIT}insert into things (id, owner) values ('last-1', 'test')`).execute(trx);
      await sql.raw(`${THEN_COMMIT}insert into things (id, owner) values ('last-1-again', 'test')`).execute(trx);
    }),
    // Still working when the other has (twice) sent its last statement.
    shared.run('l-2', async (trx) => {
      await sql`select 1`.execute(trx);
      await gate;
      await sql`insert into things (id, owner) values ('last-2-first', 'test')`.execute(trx);
      await sql.raw(`${THEN_COMMIT}insert into things (id, owner) values ('last-2', 'test')`).execute(trx);
    }),
  ]);
  await new Promise((r) => setTimeout(r, 200));
  release();
  const [first, second] = await outcomes;
  t.is(first.status, 'rejected');
  t.regex((first as PromiseRejectedResult).reason.message, /after the write’s last/);
  t.is(second.status, 'fulfilled');
  t.deepEqual(await rows('things', 'last-2'), ['last-2', 'last-2-first'], 'the other write whole');
  t.deepEqual(await rows('things', 'last-1'), ['last-1'], 'what came before the refused statement, as alone');
});

test.serial('a transaction PostgreSQL ends as a deadlock\'s victim runs again: each write commits once, its after-commit work runs once', async (t) => {
  const prefix = `deadlock-${Date.now()}-`;
  await sql.raw(`insert into things (id, owner) values ('${prefix}a', 'lock'), ('${prefix}b', 'lock')`).execute(handle.db);
  let holding = 0;
  let bothHold!: () => void;
  const barrier = new Promise<void>((resolve) => (bothHold = resolve));
  const runs = { a: 0, b: 0 };
  const told = { a: 0, b: 0 };
  // Each locks its own row, waits until the other holds its own, then wants the other's: a cycle.
  const write = (first: 'a' | 'b', second: 'a' | 'b') =>
    committed(handle.db, async (trx) => {
      runs[first] += 1;
      await sql.raw(`select id from things where id = '${prefix}${first}' for update`).execute(trx);
      if (++holding === 2) bothHold();
      await barrier;
      await sql.raw(`select id from things where id = '${prefix}${second}' for update`).execute(trx);
      await sql.raw(`insert into parts (id, thing) values ('${prefix}${first}-done', '${prefix}${first}')`).execute(trx);
      afterCommit(trx, () => (told[first] += 1), undefined);
      return first;
    });
  t.deepEqual(await Promise.all([write('a', 'b'), write('b', 'a')]), ['a', 'b']);
  // A victim's next run can meet the other again before it has committed: at least one run again.
  t.true(runs.a + runs.b >= 3, 'a victim ran again');
  t.deepEqual(told, { a: 1, b: 1 });
  t.deepEqual(await rows('parts', prefix), [`${prefix}a-done`, `${prefix}b-done`]);

  // One that keeps failing so is refused as busy, never as the database's error.
  let attempts = 0;
  const refused = await t.throwsAsync(
    committed(handle.db, async () => {
      attempts += 1;
      throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
    }),
  );
  t.is(storageFailure(refused), 'busy', 'answered 503, the vault is busy: the client may send it again');
  t.is(attempts, DEADLOCK_ATTEMPTS);
});

test.serial('a COMMIT whose outcome is unknown fails every write of the group and runs none of them again', async (t) => {
  const shared = new SharedTransactions(handle.db);
  const runs = new Map<string, number>();
  let pid: number | undefined;
  const works = [
    shared.run('u-1', insertThing('unknown-1', runs)),
    shared.run('u-2', async (trx) => {
      runs.set('unknown-slow', (runs.get('unknown-slow') ?? 0) + 1);
      pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0].pid;
      await sql.raw(`${THEN_COMMIT}insert into slow (id) values ('unknown-slow')`).execute(trx);
    }),
  ];
  // While the COMMIT waits in the trigger, the connection goes.
  const until = Date.now() + 10_000;
  while (pid === undefined && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 500));
  await sql`select pg_terminate_backend(${pid})`.execute(handle.db);
  const outcomes = await Promise.allSettled(works);
  t.deepEqual(
    outcomes.map((o) => o.status),
    ['rejected', 'rejected'],
  );
  t.deepEqual([...runs.values()], [1, 1], 'none ran again: the commit may have happened');
});
