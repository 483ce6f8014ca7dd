import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { migrations } from './migrations/index.js';

class StaticProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  }
}

/**
 * Runs on every start. Concurrent starts are serialised: on PostgreSQL by Kysely's migration
 * lock, on SQLite by running every migration in one transaction that holds the write lock
 * (`WriterDialect` in sqlite.ts).
 */
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({ db, provider: new StaticProvider() });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const reason = (error as Error)?.message ?? 'unknown error';
    // Without a failed migration, none ran: the database could not be reached or read.
    throw new Error(failed ? `migration ${failed.migrationName} failed: ${reason}` : `the database could not be migrated: ${reason}`);
  }
}

/** Readiness: every migration this build knows has been applied. */
export async function migrationsApplied(db: Kysely<any>): Promise<boolean> {
  const migrator = new Migrator({ db, provider: new StaticProvider() });
  const all = await migrator.getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}

/** The migrations this build knows that the database has not had, in order; reads only. */
export async function pendingMigrations(db: Kysely<any>): Promise<{ pending: string[]; applied: number }> {
  const migrator = new Migrator({ db, provider: new StaticProvider() });
  const all = await migrator.getMigrations();
  return { pending: all.filter((m) => m.executedAt === undefined).map((m) => m.name), applied: all.filter((m) => m.executedAt !== undefined).length };
}
