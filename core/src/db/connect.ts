import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase as SqliteDialectDatabase } from 'kysely';
import { createHash } from 'node:crypto';
import { LruMap } from '../util/lru.js';
import pg from 'pg';
import { mkdirSync } from 'node:fs';
import type { Socket } from 'node:net';
import { dirname } from 'node:path';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

export interface DatabaseHandle {
  db: Kysely<Database>;
  /**
   * For reads outside any transaction. On SQLite a second connection: Kysely runs one
   * connection's statements one at a time, and in WAL mode a reader sees every committed
   * write without waiting for the writer's open transaction. On PostgreSQL the same pool.
   */
  reader: Kysely<Database>;
  dialect: DialectName;
  /** For SQLite only: the driver handle, used by the online backup. */
  sqlite?: SqliteDatabase.Database;
}

export interface ConnectOptions {
  /** `sqlite:<path>`, `sqlite::memory:` or a `postgres://` URL. */
  url: string;
  poolSize?: number;
  /** SQLite page cache in MiB (memory traded for fewer page reads). */
  sqliteCacheMb?: number;
}

/** Distinct statements kept prepared per SQLite connection or PostgreSQL client. */
const PREPARED_STATEMENTS = 500;
/**
 * Multi-row inserts come in a few hundred lengths at most (one per row count), and preparing
 * one of 400 rows costs more than running it: on SQLite they are kept too. PostgreSQL parses
 * fast enough that only short statements earn a name.
 */
const SQLITE_PREPARED_TEXT_LIMIT = 256 * 1024;
const PREPARED_TEXT_LIMIT = 4096;

export function connect({ url, poolSize = 10, sqliteCacheMb = 32 }: ConnectOptions): DatabaseHandle {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    // Counts and sequences are bigint; JavaScript numbers hold them exactly far past our scale.
    pg.types.setTypeParser(20, (v) => Number(v));
    // Pipeline mode lets a transaction's BEGIN go out with its first statement (PreparingClient).
    const pool = new pg.Pool({ connectionString: url, max: poolSize, Client: PreparingClient, pipeline: true } as pg.PoolConfig);
    // An idle client losing its server must not crash the process; the next query reports it.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, reader: db, dialect: 'postgres' };
  }
  if (!url.startsWith('sqlite:')) throw new Error(`VAULT_DB must be sqlite:<path> or a postgres:// URL, got "${redactUrl(url)}"`);
  const path = url.slice('sqlite:'.length);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma('journal_mode = WAL');
  // NORMAL is durable across process crashes in WAL mode; only power loss can drop the last commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // Indexes with random keys (point ids, subjects) touch pages all over the file: a large page
  // cache keeps them in memory instead of re-reading them. The writer and the reader split it.
  configure(sqlite, sqliteCacheMb / 2);
  const writes = new WriteCounter();
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: preparingOnce(sqlite, writes) }) });
  if (path === ':memory:') return { db, reader: db, dialect: 'sqlite', sqlite };
  const readerSqlite = new SqliteDatabase(path);
  readerSqlite.pragma('query_only = ON');
  configure(readerSqlite, sqliteCacheMb / 2);
  const reader = new Kysely<Database>({ dialect: new SqliteDialect({ database: readingByTurns(preparingOnce(readerSqlite), readerSqlite, writes) }) });
  return { db, reader, dialect: 'sqlite', sqlite };
}

function configure(sqlite: SqliteDatabase.Database, cacheMb: number): void {
  sqlite.pragma('busy_timeout = 5000');
  // A checkpoint syncs the file; with the default 1,000 pages a write-heavy load paid for one
  // every few hundred audit events. 16 MiB of log between checkpoints costs nothing in safety.
  sqlite.pragma('wal_autocheckpoint = 4096');
  sqlite.pragma(`cache_size = -${Math.max(1024, Math.round(cacheMb * 1024))}`);
  sqlite.pragma('temp_store = memory');
}

/** Counts the statements that may change the database, run through this process's writer. */
class WriteCounter {
  count = 0;
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
      if (writes && !READ_ONLY.test(text)) writes.count += 1;
      if (text.length > SQLITE_PREPARED_TEXT_LIMIT) return sqlite.prepare(text);
      const cached = statements.get(text);
      // A statement still iterating (a streamed select) cannot run again until it finishes.
      if (cached && !cached.busy) return cached;
      const statement = sqlite.prepare(text);
      if (!cached) {
        if (statements.size >= PREPARED_STATEMENTS) statements.clear();
        statements.set(text, statement);
      }
      return statement;
    },
  };
}

/**
 * The reader's statements share one read transaction for the rest of the event loop's turn.
 * A statement on its own is a transaction of its own, and in WAL mode beginning and ending
 * one takes and releases file locks: system calls that cost several times a point lookup
 * (8 µs against 1 µs on the benchmark's machine). The shared snapshot is given up as soon as
 * this process's writer has run anything that may change the database, so a read never misses
 * a commit made through this process before it; commits of other processes are seen from the
 * next turn on. Ending it every turn keeps checkpoints from being held back.
 */
function readingByTurns(inner: SqliteDialectDatabase, sqlite: SqliteDatabase.Database, writes: WriteCounter): SqliteDialectDatabase {
  let writesSeen = -1;
  let ending: NodeJS.Immediate | undefined;
  const end = (): boolean => {
    if (!sqlite.inTransaction) return true;
    try {
      sqlite.exec('commit');
      return true;
    } catch {
      // A streamed select still iterating holds the connection: end the snapshot next turn.
      return false;
    }
  };
  const endOfTurn = (): void => {
    ending = undefined;
    if (!end()) ending = setImmediate(endOfTurn);
  };
  return {
    close: () => inner.close(),
    prepare(text: string) {
      if (sqlite.inTransaction && writesSeen !== writes.count) end();
      if (!sqlite.inTransaction) {
        sqlite.exec('begin');
        writesSeen = writes.count;
        ending ??= setImmediate(endOfTurn);
      }
      return inner.prepare(text);
    },
  };
}

/** How Kysely opens a transaction: `begin`, or `start transaction isolation level ...`. */
const BEGIN = /^(begin|start transaction)\b/i;
/** A statement that changes nothing even if it ran outside a transaction. */
const READ_ONLY = /^select\b/i;
const ROLLBACK = /^rollback\b/i;
const COMMIT = /^commit\b/i;

/**
 * Begins the text of a transaction's last statement. On PostgreSQL its COMMIT is written in
 * the same socket write, and the transaction's commit then answers with that COMMIT's
 * outcome. Nothing may run on the transaction after it, and nothing may fail: put it where
 * the transaction's callback has already made its answer.
 */
export const THEN_COMMIT = '/* then commit */ ';
const ROLLED_BACK = { command: 'ROLLBACK', rowCount: null, rows: [], fields: [] };

/**
 * A pg client that names short statements so the server parses and plans each once per
 * connection (names are derived from the text, so every process and connection agrees), and
 * that opens a transaction without a round trip of its own. On PostgreSQL each statement is a
 * round trip, and socket writes were the largest part of a store's CPU.
 *
 * A transaction's BEGIN is sent at once but answered as done; it goes out with the statement
 * after it (pipeline mode), and that statement's answer waits for BEGIN's, so a failed BEGIN
 * fails it. That statement rides along only if it is a SELECT: had BEGIN failed, it ran
 * outside any transaction, where a read changes nothing. Anything else waits for BEGIN.
 */
class PreparingClient extends pg.Client {
  private readonly prepared = new Set<string>();
  /** The answer to a BEGIN sent ahead, until the statement after it takes it over. */
  private begun?: Promise<unknown>;
  /** Set while writes are held back; lets them go at the next turn if no statement came. */
  private corked?: NodeJS.Immediate;
  /** The outcome of a COMMIT sent with the transaction's last statement (`THEN_COMMIT`). */
  private committing?: Promise<unknown>;

  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // A server gone while this client is checked out between two queries (the sealer's
    // transaction, a database dropped): the pending or next query rejects with the error;
    // without a listener the event would end the process.
    this.on('error', () => {});
  }

  override query(config: any, values?: any, callback?: any): any {
    const text = typeof config === 'string' && typeof values !== 'function' && callback === undefined ? config : undefined;
    const committing = this.committing;
    if (committing !== undefined) {
      this.committing = undefined;
      if (text !== undefined && COMMIT.test(text)) return committing;
      // The last statement failed, so its COMMIT rolled back. Had it not failed, the caller
      // broke the contract: the transaction committed, and that must not pass for a rollback.
      if (text !== undefined && ROLLBACK.test(text)) return committing.then(() => Promise.reject(new Error('the transaction had already committed')), () => ROLLED_BACK);
      return Promise.reject(new Error('a statement after the one that committed its transaction'));
    }
    if (text !== undefined && text.startsWith(THEN_COMMIT) && this.begun === undefined && (this as { pipeline?: boolean }).pipeline) {
      const stream = (this as unknown as { connection: { stream: Socket } }).connection.stream;
      stream.cork();
      const result = this.send(text, values);
      // Its own Sync: after a failed statement the server answers it with ROLLBACK, no error.
      const commit = this.send('commit') as Promise<{ command: string }>;
      stream.uncork();
      this.committing = commit.then((r) => (r.command === 'COMMIT' ? r : Promise.reject(new Error('the transaction was rolled back'))));
      this.committing.catch(() => {});
      return result;
    }
    if (text !== undefined && (this as { pipeline?: boolean }).pipeline && this.begun === undefined && BEGIN.test(text) && !(values?.length > 0)) {
      // Held back until the next statement joins it: one socket write for both.
      this.cork();
      const begun = this.send(text, values) as Promise<unknown>;
      // Reported through the statement that follows.
      begun.catch(() => {});
      this.begun = begun;
      return Promise.resolve({ command: 'BEGIN', rowCount: null, rows: [], fields: [] });
    }
    const begun = this.begun;
    if (begun === undefined) return this.send(config, values, callback);
    this.begun = undefined;
    if (text !== undefined && READ_ONLY.test(text)) {
      const result = this.send(text, values);
      this.uncork();
      return Promise.all([begun, result]).then(([, rows]) => rows);
    }
    this.uncork();
    // Safe whatever became of BEGIN, and the way out of it.
    if (text !== undefined && ROLLBACK.test(text)) return this.send(text, values);
    const after = begun.then(() => this.send(config, values, callback));
    const reply = typeof values === 'function' ? values : callback;
    if (!reply) return after;
    after.catch((err: unknown) => reply(err));
  }

  private cork(): void {
    (this as unknown as { connection: { stream: Socket } }).connection.stream.cork();
    this.corked = setImmediate(() => this.uncork());
  }

  private uncork(): void {
    if (this.corked === undefined) return;
    clearImmediate(this.corked);
    this.corked = undefined;
    (this as unknown as { connection: { stream: Socket } }).connection.stream.uncork();
  }

  private send(config: any, values?: any, callback?: any): any {
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0 && config.length <= PREPARED_TEXT_LIMIT) {
      const name = statementName(config);
      if (this.prepared.has(name) || this.prepared.size < PREPARED_STATEMENTS) {
        this.prepared.add(name);
        return super.query({ name, text: config, values }, callback);
      }
    }
    return super.query(config, values, callback);
  }
}

const names = new LruMap<string, string>(PREPARED_STATEMENTS * 2);
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `v${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}

/** Database URLs may carry passwords; they never reach an error message or a log. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
