/** `vault backup` and `vault restore`: online backups of either database, and their restore. */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { loadConfig } from '../config.js';
import { conflict } from '../errors.js';
import type { Vault } from '../vault.js';
import { redactUrl } from '../db/connect.js';
import type { DialectName } from '../db/dialect.js';
import type { ChildProcess } from 'node:child_process';
import { withVault, type Command } from './command.js';
import { restoredIndexKeyWarning } from './restore-key.js';
import { cannotWrite, isFileSystemFailure } from '../db/sqlite-access.js';
import { backupDialect, dumpMigrations, isVaultDatabase, isVaultDump, refuseNewerRelease, sqliteBackupMigrations } from './backup-files.js';

export const backupCommands: Record<string, Command> = {
  backup: {
    summary: 'Online backup of the database to a file (SQLite), or pg_dump (PostgreSQL)',
    usage: 'vault backup --to FILE',
    options: { to: { type: 'string' } },
    async run({ values }, io) {
      if (!values.to) {
        io.err('--to is required');
        return 2;
      }
      const target = resolve(String(values.to));
      const unwritable = targetProblem(target);
      if (unwritable) {
        io.err(unwritable);
        return 2;
      }
      // Whatever release the database is of: an upgrade's way back is taken before it migrates.
      await withVault(io, (vault) => backupDatabase(vault, target, io.env), { anyRelease: true });
      io.out(`Backed up to ${target}. The blind-index key (VAULT_INDEX_KEY or index.key) is not in it: keep it with the backup, apart from the private key.`);
      return 0;
    },
  },

  restore: {
    summary: 'Restore a backup made by `vault backup` (stop the vault first)',
    usage: 'vault restore --from FILE',
    options: { from: { type: 'string' } },
    async run({ values }, io) {
      if (!values.from || !statSync(String(values.from), { throwIfNoEntry: false })?.isFile()) {
        io.err('--from must name an existing backup file');
        return 2;
      }
      const config = loadConfig(io.env);
      await restoreDatabase(config.db, resolve(String(values.from)), io.env);
      io.out(`Restored ${values.from}`);
      const warning = await restoredIndexKeyWarning(config);
      if (warning) io.err(warning);
      return 0;
    },
  },
};

/** Why a backup could not be written to `target`, found before the vault is opened. */
function targetProblem(target: string): string | undefined {
  const directory = dirname(target);
  if (!statSync(directory, { throwIfNoEntry: false })?.isDirectory()) {
    return `--to: the directory ${directory} does not exist: create it first (nothing was backed up)`;
  }
  if (statSync(target, { throwIfNoEntry: false })?.isDirectory()) {
    return `--to names a directory (${target}): give the backup file's name in it`;
  }
  return undefined;
}

export async function backupDatabase(vault: Vault, target: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (vault.handle.sqlite) {
    const live = vault.config.db.slice('sqlite:'.length);
    // Renaming the copy over the live file would swap it out from under every running vault,
    // whose next writes land in a deleted file: the database is lost.
    if (isSameFile(target, live) || ['-wal', '-shm', '-journal'].some((s) => isSameFile(target, live + s))) {
      throw conflict(`--to names the vault's own database (${live}): back up to another file`);
    }
    await backupSqlite(vault.handle.sqlite, target);
    return;
  }
  // Beside the target, as on SQLite: a pg_dump that fails (or is missing) must not have
  // emptied a good backup of the same name.
  await writeBeside(target, (partial) => runPgTool('pg_dump', ['--format=custom', '--no-owner', `--file=${partial}`], vault.config.db, env));
}

/**
 * Has `write` fill a new file beside the target, readable by its owner only, and gives it the
 * target's name once synced: a failed backup never leaves a partial file, or an emptied one,
 * under that name.
 */
async function writeBeside(target: string, write: (partial: string) => void | Promise<void>): Promise<void> {
  const partial = `${target}.partial-${randomBytes(6).toString('hex')}`;
  try {
    // Created empty first, for its mode: a backup is as private as the database.
    closeSync(openSync(partial, 'wx', 0o600));
    await write(partial);
    const fd = openSync(partial, 'r+');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(partial, target);
  } finally {
    rmSync(partial, { force: true });
  }
}

/** Whether two paths name one file, through symbolic links and `..`, existing or not. */
function isSameFile(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      // Not there yet: its directory may still be reached through a link.
      try {
        return join(realpathSync(dirname(p)), basename(p));
      } catch {
        return resolve(p);
      }
    }
  };
  return real(resolve(a)) === real(resolve(b));
}

/**
 * How the PostgreSQL client tools reach the vault's database without its password on their
 * command line (where `ps` shows it) or in an error: the URL goes without it, the password in
 * PGPASSWORD, which libpq reads.
 */
function pgToolConnection(dbUrl: string, env: NodeJS.ProcessEnv): { dbname: string; env: NodeJS.ProcessEnv } {
  const url = new URL(dbUrl);
  // libpq also takes the password as a query parameter, which would leave it on the command line.
  const password = decodeURIComponent(url.password) || url.searchParams.get('password') || '';
  url.password = '';
  // Cut out as text: URLSearchParams would write every other parameter's %20 as +, which libpq
  // does not read as a space.
  const query = url.search.slice(1).split('&').filter((parameter) => parameter !== '' && !/^password(=|$)/.test(parameter));
  url.search = query.length > 0 ? `?${query.join('&')}` : '';
  return { dbname: `--dbname=${url.toString()}`, env: { ...process.env, ...env, ...(password ? { PGPASSWORD: password } : {}) } };
}

async function runPgTool(tool: 'pg_dump', args: string[], dbUrl: string, env: NodeJS.ProcessEnv): Promise<void> {
  const connection = pgToolConnection(dbUrl, env);
  const { execFileSync } = await import('node:child_process');
  try {
    execFileSync(tool, [...args, connection.dbname], { stdio: 'inherit', env: connection.env });
  } catch (err) {
    const { status, code } = err as { status?: number; code?: string };
    throw new Error(code === 'ENOENT' ? `${tool} is not installed (it comes with the PostgreSQL client tools)` : `${tool} failed (exit code ${status}); its own message is above`);
  }
}

/**
 * One consistent snapshot, copied in a single read transaction (`VACUUM INTO`) while the vault
 * goes on writing beside it. SQLite's page-by-page backup, used before, starts over whenever
 * another process writes, and a serving vault writes on every read: under load it never
 * finished (a 100 MB file, 45 s, against reads from 8 connections). Only live content is
 * copied, so pages freed by deletions (a purge's destroyed data keys among them) stay behind.
 * The copy is written beside the target (`writeBeside`).
 */
function backupSqlite(sqlite: Database.Database, target: string): Promise<void> {
  return writeBeside(target, (partial) => {
    sqlite.prepare('vacuum into ?').run(partial);
  });
}

/**
 * Whether another connection has the SQLite file open. Restoring under a running vault would
 * delete its write-ahead log, commits not yet copied into the file with it, and replace the
 * file beneath it. An exclusive lock is refused while any other connection holds the file.
 */
function openElsewhere(path: string): boolean {
  if (!existsSync(path)) return false;
  const probe = new Database(path, { timeout: 0 });
  try {
    probe.pragma('locking_mode = exclusive');
    probe.exec('begin exclusive');
    probe.exec('rollback');
    return false;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw err;
  } finally {
    probe.close();
  }
}

function refuseIfOpen(path: string): void {
  if (openElsewhere(path)) throw conflict(`${path} is open in another process (a running vault?): stop it before restoring`);
}

const DIALECT_NAMES: Record<DialectName, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

export async function restoreDatabase(dbUrl: string, source: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const configured: DialectName = dbUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  const made = backupDialect(source);
  if (made !== undefined && made !== configured) {
    throw conflict(
      `${source} is a ${DIALECT_NAMES[made]} backup, but VAULT_DB configures a ${DIALECT_NAMES[configured]} vault: restore it into a vault on ${DIALECT_NAMES[made]}; nothing was changed`,
    );
  }
  if (configured === 'sqlite') {
    const path = dbUrl.slice('sqlite:'.length);
    if (isSameFile(source, path)) throw conflict(`--from names the vault's own database (${path})`);
    if (!isVaultDatabase(source)) throw conflict(`${source} is not a vault database made by \`vault backup\`: nothing was changed`);
    refuseNewerRelease(source, sqliteBackupMigrations(source));
    try {
      await replaceSqlite(path, source);
    } catch (err) {
      // SQLite says only `disk I/O error` of a directory it may not write (its lock probe).
      if (isFileSystemFailure(err) || ['EACCES', 'EPERM', 'EROFS'].includes((err as NodeJS.ErrnoException).code ?? '')) throw cannotWrite(path, err as Error);
      throw err;
    }
    return;
  }
  if (!(await isVaultDump(source, env))) throw conflict(`${source} is not a vault database made by \`vault backup\`: nothing was changed`);
  refuseNewerRelease(source, await dumpMigrations(source, env));
  await refuseRestoreInto(dbUrl);
  await restoreInOneTransaction(dbUrl, source, env);
}

async function replaceSqlite(path: string, source: string): Promise<void> {
  refuseIfOpen(path);
  // Onto a new machine: the directory is made as a start makes it, private to its owner.
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Copied beside the database, then renamed over it: a vault starting meanwhile opens the
  // old file or the whole restored one, never one half copied; a failed copy changes nothing.
  await writeBeside(path, (partial) => {
    copyFileSync(source, partial);
    // As private as a new database, whatever the backup file's mode was (the copy takes it).
    chmodSync(partial, 0o600);
    // Again, as a vault may have started during the copy.
    refuseIfOpen(path);
    // A stale write-ahead log would be replayed over the restored file.
    for (const suffix of ['-wal', '-shm']) rmSync(path + suffix, { force: true });
  });
}

/**
 * Every table, view, sequence and function of the vault's schema, as `drop` names them.
 * Objects of extensions are left alone.
 */
const VAULT_SCHEMA_OBJECTS = `
  select case c.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'S' then 'sequence' else 'table' end as kind,
         format('%I.%I', n.nspname, c.relname) as name
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where n.nspname = current_schema() and c.relkind in ('r', 'p', 'v', 'm', 'S')
     and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('e', 'a', 'i'))
  union all
  select 'function', format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid))
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where n.nspname = current_schema()
     and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`;

const OTHER_SESSIONS = `
  select count(*)::int from pg_stat_activity
   where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;

/** Raised inside the restore's transaction; the restore turns it into `otherSessions`' message. */
const SESSIONS_MARKER = 'vault restore: other sessions connected:';

function otherSessions(dbUrl: string, n: number): Error {
  return conflict(`${redactUrl(dbUrl)} has ${n} other session${n === 1 ? '' : 's'} connected (a running vault?): stop ${n === 1 ? 'it' : 'them'} before restoring; nothing was changed`);
}

/**
 * What the restore's transaction runs before the backup's own statements. It takes every
 * table of the schema in ACCESS EXCLUSIVE mode before anything else, so a session that
 * connects from then on and reads or writes one waits until the restore has committed, then
 * sees the restored table, never an empty or half-filled one. Sessions already connected are
 * refused again here, after the locks: one may have connected since `refuseRestoreInto`
 * looked. Then the schema is emptied whole, so the restored database is the backup's and
 * nothing else: `pg_restore --clean` drops only what the dump holds, and tables a newer
 * release added stayed while the migration table went back (the next start failed
 * re-creating them).
 */
const EMPTY_SCHEMA_EXCLUSIVELY = `
do $vault_restore$
declare
  o record;
  others int;
begin
  for o in select name from (${VAULT_SCHEMA_OBJECTS}) objects where kind = 'table' order by name loop
    execute 'lock table ' || o.name || ' in access exclusive mode';
  end loop;
  -- The activity view is read once per transaction: read it afresh, after the locks.
  perform pg_stat_clear_snapshot();
  ${OTHER_SESSIONS.trim()} into others;
  if others > 0 then
    raise exception '${SESSIONS_MARKER}%', others;
  end if;
  for o in ${VAULT_SCHEMA_OBJECTS} loop
    execute format('drop %s if exists %s cascade', o.kind, o.name);
  end loop;
end
$vault_restore$;
`;

/**
 * Refusals found before anything changes: a vault (or anyone) still connected would go on
 * serving from tables being replaced, and write into them; a schema holding tables but no
 * vault is not the vault's, so a VAULT_DB naming the wrong database loses nothing.
 */
async function refuseRestoreInto(dbUrl: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: dbUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    const objects = await client.query<{ kind: string; name: string }>(VAULT_SCHEMA_OBJECTS);
    const tables = objects.rows.filter((o) => o.kind === 'table');
    if (tables.length > 0 && !tables.some((o) => /^"?[^.]+"?\.kysely_migration$/.test(o.name))) {
      throw conflict(`${redactUrl(dbUrl)} holds tables but no vault: nothing was changed (restore into the vault's own database)`);
    }
    const { rows } = await client.query<{ count: number }>(OTHER_SESSIONS);
    if (rows[0].count > 0) throw otherSessions(dbUrl, rows[0].count);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Empties the schema and restores the dump in one transaction of one session: psql runs
 * `EMPTY_SCHEMA_EXCLUSIVELY`, then the script pg_restore makes of the dump. Until it commits,
 * other sessions see the database as it was, or wait; if anything fails, nothing changed.
 * (pg_restore connecting on its own could not drop the schema in its transaction: between
 * the two commits a vault starting would have found an empty database.)
 */
async function restoreInOneTransaction(dbUrl: string, source: string, env: NodeJS.ProcessEnv): Promise<void> {
  const { spawn } = await import('node:child_process');
  const connection = pgToolConnection(dbUrl, env);
  const psql = spawn('psql', ['--no-psqlrc', '--quiet', '--single-transaction', '--set=ON_ERROR_STOP=1', '--file=-', connection.dbname], {
    env: connection.env,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  const script = spawn('pg_restore', ['--no-owner', '--file=-', source], { env: connection.env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = (child: ChildProcess) =>
    new Promise<{ status: number | null; missing: boolean }>((done) => {
      child.once('error', (err) => done({ status: null, missing: (err as NodeJS.ErrnoException).code === 'ENOENT' }));
      child.once('close', (status) => done({ status, missing: false }));
    });
  const psqlExit = exited(psql);
  const scriptExit = exited(script);
  const psqlErrors: Buffer[] = [];
  psql.stderr.on('data', (chunk: Buffer) => psqlErrors.push(chunk));
  psql.stdin.on('error', () => {});
  psql.stdin.write(EMPTY_SCHEMA_EXCLUSIVELY);
  script.stdout.pipe(psql.stdin, { end: false });
  // psql commits once its input ends, so it ends only after the whole script: when
  // pg_restore fails midway, psql is killed instead and the server rolls the transaction back.
  void scriptExit.then(({ status }) => (status === 0 ? psql.stdin.end() : psql.kill('SIGKILL')));
  void psqlExit.then(() => script.exitCode === null && script.kill('SIGKILL'));
  const [restored, made] = await Promise.all([psqlExit, scriptExit]);

  const notInstalled = (tool: string) => new Error(`${tool} is not installed (it comes with the PostgreSQL client tools)`);
  if (made.missing) throw notInstalled('pg_restore');
  if (restored.missing) throw notInstalled('psql');
  const errors = Buffer.concat(psqlErrors).toString('utf8');
  const sessions = errors.match(new RegExp(`${SESSIONS_MARKER}(\\d+)`));
  if (sessions) throw otherSessions(dbUrl, Number(sessions[1]));
  if (made.status !== 0) throw new Error(`pg_restore failed (exit code ${made.status}); its own message is above. Nothing was changed`);
  if (restored.status !== 0) {
    process.stderr.write(errors);
    throw new Error(`psql failed restoring the backup (exit code ${restored.status}); its own message is above. Nothing was changed`);
  }
}
