/**
 * SQLite connections: a writer, and a read-only reader that never waits for the writer's
 * open transaction (WAL mode). Both keep their statements prepared.
 */
import SqliteDatabase from 'better-sqlite3';
import { Kysely, type SqliteDatabase as SqliteDialectDatabase } from 'kysely';
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseHandle } from './connect.js';
import type { Database } from './schema.js';
import { WalCheckpointer } from './checkpointer.js';
import { cannotWrite, isFileSystemFailure, requireWritableFile } from './sqlite-access.js';
import { ReaderDialect, WriterDialect } from './sqlite-drivers.js';
import { readingByTurns, readingOnWriterWhenFree, WriteCounter, WriterSnapshot } from './sqlite-reads.js';

/** Distinct statements kept prepared per connection. */
const PREPARED_STATEMENTS = 500;
/**
 * Multi-row inserts come in a few hundred lengths at most (one per row count), and preparing
 * one of 400 rows costs more than running it: they are kept too.
 */
const PREPARED_TEXT_LIMIT = 256 * 1024;

/**
 * Pages of log after which a connection that commits checkpoints by itself (SQLite's default
 * is 1,000): a checkpoint syncs the file, and with the default a write-heavy load paid for one
 * every few hundred audit events. 16 MiB of log between checkpoints costs nothing in safety.
 */
const AUTOCHECKPOINT_PAGES = 4096;

export interface SqliteOptions {
  cacheMb: number;
  /** Told when the checkpoint thread fails (the writer then checkpoints by itself again). */
  onCheckpointError?: (err: Error) => void;
  /** Told which files others could read, and were made private (`tightenMode`). */
  onModesTightened?: (changes: string[]) => void;
}

export function connectSqlite(path: string, { cacheMb, onCheckpointError, onModesTightened }: SqliteOptions): DatabaseHandle {
  if (path !== ':memory:') {
    const changes = keepPrivate(path);
    if (changes.length > 0) onModesTightened?.(changes);
  }
  // SQLite would open a file it may not write read-only, and fail only at the first write.
  if (path !== ':memory:') requireWritableFile(path);
  const sqlite = new SqliteDatabase(path);
  try {
    sqlite.pragma('journal_mode = WAL');
    // The write-ahead log and its index are opened, or created, by the first read.
    sqlite.prepare('select count(*) from sqlite_master').get();
  } catch (err) {
    sqlite.close();
    throw isFileSystemFailure(err) ? cannotWrite(path, err as Error) : err;
  }
  // NORMAL is durable across process crashes in WAL mode; only power loss can drop the last commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // A delete otherwise leaves the row's bytes in the page's free space: a purged subject's
  // wrapped data key would stay in the file (and in any copy of it) until overwritten, and
  // the private key would still open its values there. Zeroing costs a write only for pages
  // that leave the b-tree, which deletes alone cause.
  sqlite.pragma('secure_delete = ON');
  // Indexes with random keys (point ids, subjects) touch pages all over the file: a large page
  // cache keeps them in memory instead of re-reading them. The writer and the reader split it.
  configure(sqlite, cacheMb / 2);
  const writes = new WriteCounter();
  const writer = preparingOnce(sqlite, writes);
  const snapshot = new WriterSnapshot(sqlite);
  const db = new Kysely<Database>({ dialect: new WriterDialect({ database: writer }, sqlite, snapshot) });
  if (path === ':memory:') return { db, reader: db, dialect: 'sqlite', sqlite };
  const readerSqlite = new SqliteDatabase(path);
  readerSqlite.pragma('query_only = ON');
  configure(readerSqlite, cacheMb / 2);
  const reader = new Kysely<Database>({
    dialect: new ReaderDialect({ database: readingOnWriterWhenFree(writer, snapshot, readingByTurns(preparingOnce(readerSqlite), readerSqlite, writes)) }),
  });
  // The thread copies the log's pages as they come. The writer's own threshold, now four
  // times the usual, is what starts the log over under a steady load (see checkpointer.ts);
  // should the thread stop, the writer goes back to the usual one.
  sqlite.pragma(`wal_autocheckpoint = ${4 * AUTOCHECKPOINT_PAGES}`);
  const checkpointer = new WalCheckpointer(path, {
    onError: (err) => {
      if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      onCheckpointError?.(err);
    },
  });
  const closeFiles = () => {
    for (const connection of [sqlite, readerSqlite]) if (connection.open) connection.close();
  };
  return { db, reader, dialect: 'sqlite', sqlite, checkpointer, closeFiles };
}

/**
 * The database file is readable by its owner only, its directory too when created here: the
 * file holds no value in clear, but subjects' ids, the activity log and wrapped keys. SQLite
 * gives its write-ahead log and shared-memory files the database file's permissions. Older
 * releases created the file 0644 and made nothing private afterwards, so an existing file (and
 * a log or journal left beside it) is made private on every open too. A directory it did not
 * create is left as it is: it may be shared, as /tmp is. Returns what it changed.
 */
function keepPrivate(path: string): string[] {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return [path, `${path}-wal`, `${path}-shm`, `${path}-journal`].map((file) => tightenMode(file, 0o600)).filter((c): c is string => c !== undefined);
}

/**
 * Takes the permissions others have on an existing file or directory away, leaving the
 * owner's as `mode` gives them. Says what it changed, or why it could not (a file of another
 * user); nothing when there was nothing to change or no such file.
 */
export function tightenMode(path: string, mode: number): string | undefined {
  let current: number;
  try {
    current = statSync(path).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if ((current & ~mode) === 0) return undefined;
  const octal = (m: number) => `0${m.toString(8).padStart(3, '0')}`;
  try {
    chmodSync(path, mode);
    return `${path} ${octal(current)} -> ${octal(mode)}`;
  } catch (err) {
    return `${path} stays ${octal(current)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
}

function configure(sqlite: SqliteDatabase.Database, cacheMb: number): void {
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  sqlite.pragma(`cache_size = -${Math.max(1024, Math.round(cacheMb * 1024))}`);
  sqlite.pragma('temp_store = memory');
}

/**
 * Kysely prepares every statement it runs; preparing costs more than running a point query.
 * Statements are kept by their text (parameters are bound per run), so each hot query is
 * prepared once per connection.
 */
function preparingOnce(sqlite: SqliteDatabase.Database, writes?: WriteCounter): SqliteDialectDatabase {
  // A plain map, emptied when full: an LRU's reordering costs more than the rare re-prepare.
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(text: string) {
      // Counted before it runs: Kysely runs a statement right after preparing it, so no read
      // can come between the two and miss the change.
      if (writes && !/^select\b/i.test(text)) writes.count += 1;
      if (text.length > PREPARED_TEXT_LIMIT) return sqlite.prepare(text);
      const cached = statements.get(text);
      // A statement still iterating (a streamed select) cannot run again until it finishes.
      if (cached && !cached.busy) return cached;
      const statement = sqlite.prepare(text);
      if (!cached) {
        if (statements.size >= PREPARED_STATEMENTS) statements.clear();
        const kept = statement.reader ? rowsFromArrays(statement) : statement;
        statements.set(text, kept);
        return kept;
      }
      return statement;
    },
  };
}

/**
 * A select whose rows better-sqlite3 returns as arrays and a function compiled for its columns
 * turns into objects. better-sqlite3 builds each row object property by property through V8's
 * API: a subject read's twenty rows cost 46 µs that way and 26 µs as arrays, the object
 * literals included. Kept statements only, since compiling the literal costs more than a row.
 */
function rowsFromArrays(statement: SqliteDatabase.Statement): SqliteDatabase.Statement {
  const columnsOf = (s: SqliteDatabase.Statement) => s.columns().map((c) => c.name);
  let names = columnsOf(statement);
  let toRow = rowBuilder(names);
  const raw = statement.raw(true);
  const objects = (values: unknown[]) => {
    // SQLite prepares a statement again when the schema changes under it, so `select *` can
    // gain columns (another process's migration).
    if (values.length !== names.length) toRow = rowBuilder((names = columnsOf(raw)));
    return toRow(values);
  };
  // Only what Kysely and the cache above use of a statement; the native getters would refuse
  // any receiver but the statement itself.
  const rows = {
    reader: true,
    get busy() {
      return raw.busy;
    },
    all: (...parameters: unknown[]) => (raw.all(...parameters) as unknown[][]).map(objects),
    get: (...parameters: unknown[]) => {
      const values = raw.get(...parameters) as unknown[] | undefined;
      return values && objects(values);
    },
    *iterate(...parameters: unknown[]) {
      for (const values of raw.iterate(...parameters) as IterableIterator<unknown[]>) yield objects(values);
    },
  };
  return rows as unknown as SqliteDatabase.Statement;
}

/** Duplicate names keep the last value, as better-sqlite3's own row objects do. */
function rowBuilder(names: string[]): (values: unknown[]) => unknown {
  // A literal's "__proto__" key would set the prototype rather than a property.
  if (names.includes('__proto__')) return (values) => Object.fromEntries(names.map((name, i) => [name, values[i]]));
  return new Function('r', `return {${names.map((name, i) => `${JSON.stringify(name)}: r[${i}]`).join(', ')}};`) as (values: unknown[]) => unknown;
}
