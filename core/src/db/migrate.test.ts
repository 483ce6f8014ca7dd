/**
 * What an upgrade leaves when it cannot complete: a database a newer release migrated is
 * refused by name, and a migration that fails leaves the database as the older release had it
 * (all pending migrations run in one transaction, on both dialects), so the next start retries.
 */
import test from 'ava';
import { Migrator, sql, type Kysely } from 'kysely';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, disconnect, type DatabaseHandle } from './connect.js';
import { migrateToLatest, pendingMigrations } from './migrate.js';
import { migrations } from './migrations/index.js';
import { createPostgresDatabase } from '../testing/harness.js';

const names = Object.keys(migrations);

async function database(t: { teardown(fn: () => Promise<void> | void): void }, dialect: 'sqlite' | 'postgres'): Promise<DatabaseHandle> {
  let url: string;
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'vault-migrate-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    url = `sqlite:${join(dir, 'vault.db')}`;
  } else {
    const created = await createPostgresDatabase();
    t.teardown(created.drop);
    url = created.url;
  }
  const handle = connect({ url });
  t.teardown(() => disconnect(handle));
  return handle;
}

async function migrateTo(db: Kysely<any>, last: string): Promise<void> {
  const { error } = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateTo(last);
  if (error) throw error;
}

async function applied(db: Kysely<any>): Promise<string[]> {
  return (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db)).rows.map((r) => r.name);
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  test(`${dialect}: a database a newer release migrated is refused, naming what this release does not know, and left as it was`, async (t) => {
    const { db } = await database(t, dialect);
    await migrateToLatest(db);
    await sql`insert into kysely_migration (name, timestamp) values ('9999_from_a_newer_release', ${new Date().toISOString()})`.execute(db);

    const refused = await t.throwsAsync(migrateToLatest(db));
    t.is(
      refused?.message,
      'the database was migrated by a newer release of the vault (9999_from_a_newer_release, unknown to this one): run that release, or restore the backup taken before the upgrade',
    );
    t.deepEqual(await pendingMigrations(db), { pending: [], applied: names.length, unknown: ['9999_from_a_newer_release'] });
    t.deepEqual(await applied(db), [...names, '9999_from_a_newer_release']);
  });

  test(`${dialect}: a migration that fails half-way leaves the database as the older release had it, and the next start migrates it`, async (t) => {
    const { db } = await database(t, dialect);
    await migrateTo(db, '0010_application_key_roll');
    // Something in the way of 0012, after 0011 has altered the activity log in the same run.
    await sql`create table index_key_check (id integer)`.execute(db);

    const failed = await t.throwsAsync(migrateToLatest(db));
    t.regex(failed?.message ?? '', /^migration 0012_index_key_check failed: /);
    t.deepEqual(await applied(db), names.slice(0, 10), 'no migration of the run is recorded');
    // 0011's column went with it: the older release's inserts, which do not name it, still work.
    const columns = await db.introspection.getTables();
    const log = columns.find((table) => table.name === 'activity_log');
    t.false(log?.columns.some((c) => c.name === 'change'), '0011 was rolled back with 0012');

    await sql`drop table index_key_check`.execute(db);
    await migrateToLatest(db);
    t.deepEqual(await applied(db), names);
  });
}
