/**
 * SQLite's writer beside other processes on the same file (a second vault during a rolling
 * restart, the command line): its transactions must wait for another process's write, never
 * fail because of it, and vaults starting together on a new file must all start.
 */
import test from 'ava';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { connect, disconnect } from './connect.js';
import { migrations } from './migrations/index.js';

function tempFile(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'vault-writer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'vault.db');
}

test('a transaction holds the write lock from BEGIN, so another process cannot commit under what it read', async (t) => {
  const path = tempFile(t);
  const handle = connect({ url: `sqlite:${path}` });
  await handle.checkpointer?.stop();
  // No busy timeout: the other process's write is refused at once instead of waiting.
  const other = new SqliteDatabase(path, { timeout: 0 });
  t.teardown(async () => {
    other.close();
    await disconnect(handle);
  });
  await sql`create table notes (id integer primary key)`.execute(handle.db);

  await handle.db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ n: number }>`select count(*) as n from notes`.execute(trx);
    t.is(rows[0].n, 0);
    // With a deferred BEGIN this insert would commit, and the transaction's own insert below
    // would fail with "database is locked": its snapshot would be stale.
    let refused: unknown;
    try {
      other.prepare('insert into notes values (1)').run();
    } catch (err) {
      refused = err;
    }
    t.is((refused as { code?: string } | undefined)?.code, 'SQLITE_BUSY');
    await sql`insert into notes values (2)`.execute(trx);
  });
  other.prepare('insert into notes values (1)').run();
  t.deepEqual(other.prepare('select id from notes order by id').pluck().all(), [1, 2]);
});

test('vaults migrating a new file at the same time all start, and each migration runs once', async (t) => {
  const path = tempFile(t);
  const connectModule = pathToFileURL(join(import.meta.dirname, 'connect.ts')).href;
  const migrateModule = pathToFileURL(join(import.meta.dirname, 'migrate.ts')).href;
  // Each connects, says so, and migrates when told: all four at once.
  const script = `
    const { connect, disconnect } = await import(${JSON.stringify(connectModule)});
    const { migrateToLatest } = await import(${JSON.stringify(migrateModule)});
    const handle = connect({ url: ${JSON.stringify(`sqlite:${path}`)} });
    process.stdout.write('ready\\n');
    await new Promise((resolve) => process.stdin.once('data', resolve));
    await migrateToLatest(handle.db);
    await disconnect(handle);
    process.stdout.write('migrated');
    process.exit(0);
  `;
  const children = Array.from({ length: 4 }, () => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = once(child, 'exit').then(([code]) => ({ code, out }));
    const ready = new Promise<void>((resolve) => child.stdout.on('data', () => out.includes('ready') && resolve()));
    t.teardown(() => void child.kill('SIGKILL'));
    return { child, exited, ready };
  });
  await Promise.race([Promise.all(children.map((c) => c.ready)), Promise.all(children.map((c) => c.exited))]);
  for (const c of children) c.child.stdin.end('go');
  for (const { code, out } of await Promise.all(children.map((c) => c.exited))) {
    t.is(code, 0, out);
    t.true(out.endsWith('migrated'), out);
  }
  const db = new SqliteDatabase(path, { readonly: true });
  t.teardown(() => db.close());
  const applied = db.prepare('select name from kysely_migration order by name').pluck().all();
  t.deepEqual(applied, Object.keys(migrations).sort());
});

test('a transaction SQLite rolled back by itself fails as a whole: nothing after it commits on its own', async (t) => {
  const handle = connect({ url: `sqlite:${tempFile(t)}` });
  t.teardown(() => disconnect(handle));
  // RAISE(ROLLBACK) ends the whole transaction from inside a statement, as a full disk or an
  // I/O error can.
  await sql`create table notes (id integer primary key)`.execute(handle.db);
  await sql`create table trap (id integer)`.execute(handle.db);
  await sql`create trigger trap_rollback before insert on trap begin select raise(rollback, 'the disk is full'); end`.execute(handle.db);

  const failed = await t.throwsAsync(
    handle.db.transaction().execute(async (trx) => {
      await sql`insert into notes values (1)`.execute(trx);
      // Code that catches a failed statement and goes on, as a savepoint's caller does.
      await sql`insert into trap values (1)`.execute(trx).then(
        () => t.fail('the trigger did not fire'),
        () => {},
      );
      await sql`insert into notes values (2)`.execute(trx);
    }),
  );
  t.is(failed?.message, 'SQLite rolled the transaction back: the disk is full');
  const { rows } = await sql<{ id: number }>`select id from notes`.execute(handle.db);
  t.deepEqual(rows, [], 'neither the insert before the failure nor the one after it committed');

  // The connection goes on: the next transaction commits.
  await handle.db.transaction().execute((trx) => sql`insert into notes values (3)`.execute(trx));
  t.deepEqual((await sql<{ id: number }>`select id from notes`.execute(handle.db)).rows, [{ id: 3 }]);
});
