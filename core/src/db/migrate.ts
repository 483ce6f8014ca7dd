import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { migrations } from './migrations/index.js';

class StaticProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  }
}

/**
 * Runs on every start. Concurrent starts are serialised: on PostgreSQL by Kysely's migration
 * lock, on SQLite by running every migration in one transaction that holds the write lock
 * (`WriterDialect` in sqlite.ts). On both, the pending migrations run in one transaction: one
 * that fails takes the others of its run with it, leaving the database as the older release
 * had it, and the next start runs them all again.
 */
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  // Kysely says "corrupted migrations: previously executed migration … is missing", which
  // sends an operator looking for damage rather than at the release they started.
  const { unknown } = await pendingMigrations(db);
  if (unknown.length > 0) throw new Error(newerRelease(unknown));
  const migrator = new Migrator({ db, provider: new StaticProvider() });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const reason = (error as Error)?.message ?? 'unknown error';
    // Without a failed migration, none ran: the database could not be reached or read.
    throw new Error(failed ? `migration ${failed.migrationName} failed: ${reason}` : `the database could not be migrated: ${reason}`);
  }
}

/** Why a release refuses a database that a newer one migrated. */
export function newerRelease(unknown: readonly string[]): string {
  return `the database was migrated by a newer release of the vault (${unknown.join(', ')}, unknown to this one): run that release, or restore the backup taken before the upgrade`;
}

/**
 * Readiness: every migration this build knows has been applied, and none it does not: a
 * process of an older release left running after a newer one migrated stops being ready,
 * so a load balancer takes it out before it misbehaves on tables changed beneath it.
 */
export async function migrationState(db: Kysely<any>): Promise<'current' | 'pending' | 'newer'> {
  const { pending, unknown } = await pendingMigrations(db);
  return unknown.length > 0 ? 'newer' : pending.length > 0 ? 'pending' : 'current';
}

/**
 * The migrations this build knows that the database has not had, in order, and those the
 * database has had that this build does not know (a newer release's); reads only.
 */
export async function pendingMigrations(db: Kysely<any>): Promise<{ pending: string[]; applied: number; unknown: string[] }> {
  const migrator = new Migrator({ db, provider: new StaticProvider() });
  const all = await migrator.getMigrations();
  const applied = all.filter((m) => m.executedAt !== undefined).length;
  // Without one applied there may be no migration table to read (a new database).
  const recorded = applied === 0 ? [] : (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db)).rows.map((r) => r.name);
  return { pending: all.filter((m) => m.executedAt === undefined).map((m) => m.name), applied, unknown: recorded.filter((name) => !Object.hasOwn(migrations, name)) };
}
