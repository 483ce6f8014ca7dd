/**
 * What a backup file is, asked before a restore replaces anything: which database made it,
 * whether it holds a vault, and of which release.
 */
import Database from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { conflict } from '../errors.js';
import type { DialectName } from '../db/dialect.js';
import { migrations } from '../db/migrations/index.js';

/** Whether the file is a vault's SQLite database: checked before it replaces the one in use. */
export function isVaultDatabase(path: string): boolean {
  let probe: Database.Database | undefined;
  try {
    probe = new Database(path, { readonly: true, fileMustExist: true });
    const tables = probe.prepare("select name from sqlite_master where type = 'table' and name in ('kysely_migration', 'activity_log', 'datapoints')").pluck().all();
    return tables.length === 3;
  } catch {
    return false;
  } finally {
    probe?.close();
  }
}

/** Which database made a backup, from its first bytes: SQLite's file header, or pg_dump's custom format. */
export function backupDialect(source: string): DialectName | undefined {
  const head = Buffer.alloc(16);
  const fd = openSync(source, 'r');
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  if (head.equals(Buffer.from('SQLite format 3\0'))) return 'sqlite';
  return head.subarray(0, 5).toString('latin1') === 'PGDMP' ? 'postgres' : undefined;
}

/**
 * A backup of a newer release's database, restored by this one, would replace the working
 * database with one that no start or verb of this release accepts: refused before anything changes.
 */
export function refuseNewerRelease(source: string, applied: readonly string[]): void {
  const unknown = applied.filter((name) => !Object.hasOwn(migrations, name));
  if (unknown.length > 0) {
    throw conflict(`${source} was made by a newer release of the vault (${unknown.join(', ')}, unknown to this one): restore it with that release; nothing was changed`);
  }
}

/** The migrations a SQLite backup's database had applied. */
export function sqliteBackupMigrations(source: string): string[] {
  const probe = new Database(source, { readonly: true, fileMustExist: true });
  try {
    return probe.prepare('select name from kysely_migration').pluck().all() as string[];
  } finally {
    probe.close();
  }
}

/**
 * The migrations a pg_dump archive's database had applied: its migration table's rows, as
 * pg_restore writes them out (a COPY block), read without restoring anything.
 */
export async function dumpMigrations(source: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const { execFileSync } = await import('node:child_process');
  const script = execFileSync('pg_restore', ['--data-only', '--table=kysely_migration', '--file=-', source], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    env: { ...process.env, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  const lines = script.split('\n');
  const start = lines.findIndex((line) => /^COPY \S*kysely_migration \(/.test(line));
  if (start < 0) return [];
  const columns = /\(([^)]*)\)/.exec(lines[start])![1].split(',').map((c) => c.trim().replace(/^"|"$/g, ''));
  const at = columns.indexOf('name');
  const names: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line === '\\.') break;
    names.push(line.split('\t')[at]);
  }
  return names;
}

/** Whether a file is a pg_dump archive holding a vault (its migration table), asked of pg_restore. */
export async function isVaultDump(source: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  const { execFileSync } = await import('node:child_process');
  let contents: string;
  try {
    contents = execFileSync('pg_restore', ['--list', source], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') throw new Error('pg_restore is not installed (it comes with the PostgreSQL client tools)');
    return false;
  }
  return /^\d+; \d+ \d+ TABLE \S+ kysely_migration /m.test(contents);
}
