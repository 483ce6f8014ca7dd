import type SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect } from 'kysely';
import { createHash } from 'node:crypto';
import { LruMap } from '../util/lru.js';
import pg from 'pg';
import type { Socket } from 'node:net';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';
import { connectSqlite } from './sqlite.js';
import type { WalCheckpointer } from './checkpointer.js';

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
  /** For an SQLite file: the thread that checkpoints its log. */
  checkpointer?: WalCheckpointer;
  /**
   * For PostgreSQL only: a connection of its own without the statement timeout, for
   * migrations, which may rightly rewrite a large table for minutes. Destroy it after.
   */
  unbounded?(): Kysely<Database>;
  /**
   * For an SQLite file: closes both connections if they are still open. Kysely closes a
   * connection only if it ran a statement, and a verb that never read through the reader
   * left its file open for as long as the process ran.
   */
  closeFiles?(): void;
}

export interface ConnectOptions {
  /** `sqlite:<path>`, `sqlite::memory:` or a `postgres://` URL. */
  url: string;
  poolSize?: number;
  /** SQLite page cache in MiB (memory traded for fewer page reads). */
  sqliteCacheMb?: number;
  /** Told when SQLite's checkpoint thread fails. */
  onCheckpointError?: (err: Error) => void;
  /** Told which SQLite files others could read, and were made private. */
  onModesTightened?: (changes: string[]) => void;
  /** PostgreSQL: how long to wait for a connection (pool full, or the server not answering), ms. */
  connectTimeoutMs?: number;
  /**
   * PostgreSQL: how long a statement may go unanswered before its connection is given up,
   * ms; 0 waits forever. Also how long the server keeps a session idle inside a transaction,
   * so a vault cut off mid-transaction does not hold its locks against the other processes.
   */
  statementTimeoutMs?: number;
}

/** Distinct statements kept prepared per PostgreSQL client. */
const PREPARED_STATEMENTS = 500;
/** PostgreSQL parses fast enough that only short statements earn a name. */
const PREPARED_TEXT_LIMIT = 4096;

export function connect({ url, poolSize = 10, sqliteCacheMb = 32, onCheckpointError, onModesTightened, connectTimeoutMs = 10_000, statementTimeoutMs = 30_000 }: ConnectOptions): DatabaseHandle {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    // Counts and sequences are bigint; JavaScript numbers hold them exactly far past our scale.
    pg.types.setTypeParser(20, (v) => Number(v));
    // Without these a request waits forever on a server that stopped answering: a network
    // partition sends no reset, and pg waits for a connection or an answer without limit.
    const bounded = {
      connectionTimeoutMillis: connectTimeoutMs,
      ...(statementTimeoutMs > 0 ? { abandonAfterMs: statementTimeoutMs, idle_in_transaction_session_timeout: statementTimeoutMs } : {}),
    };
    // Pipeline mode lets a transaction's BEGIN go out with its first statement (PreparingClient).
    const pool = new pg.Pool({ connectionString: url, max: poolSize, Client: PreparingClient, pipeline: true, ...bounded } as pg.PoolConfig);
    // An idle client losing its server must not crash the process; the next query reports it.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    const unbounded = () => {
      const own = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: connectTimeoutMs });
      own.on('error', () => {});
      return new Kysely<Database>({ dialect: new PostgresDialect({ pool: own }) });
    };
    return { db, reader: db, dialect: 'postgres', unbounded };
  }
  if (!url.startsWith('sqlite:')) throw new Error(`VAULT_DB must be sqlite:<path> or a postgres:// URL, got "${redactUrl(url)}"`);
  return connectSqlite(url.slice('sqlite:'.length), { cacheMb: sqliteCacheMb, onCheckpointError, onModesTightened });
}

/** Closes every connection of a handle, the checkpoint thread's first. */
export async function disconnect(handle: DatabaseHandle): Promise<void> {
  await handle.checkpointer?.stop();
  await handle.db.destroy();
  if (handle.reader !== handle.db) await handle.reader.destroy();
  handle.closeFiles?.();
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
 * PostgreSQL answers the COMMIT of a transaction in which a statement failed with ROLLBACK,
 * not with an error: a caller that swallowed the failure would take it for a commit. The
 * client reports it as an error of SQLSTATE class 40 (transaction rollback).
 */
function rolledBack(): Error {
  return Object.assign(new Error('the transaction was rolled back'), { code: '40000' });
}

const committed = (r: { command?: string }) => (r.command === 'COMMIT' ? r : Promise.reject(rolledBack()));

/**
 * A pg client that names short statements so the server parses and plans each once per
 * connection (names are derived from the text, so every process and connection agrees), and
 * that opens a transaction without a round trip of its own. On PostgreSQL each statement is a
 * round trip, and socket writes were the largest part of a store's CPU.
 *
 * What is sent in one turn of the event loop goes out in one socket write (pipeline mode
 * sends without waiting for answers): the statements of the stores that share a transaction
 * (`SharedTransactions`) leave together.
 *
 * A transaction's BEGIN is sent at once but answered as done; it goes out with the statement
 * after it (pipeline mode), and that statement's answer waits for BEGIN's, so a failed BEGIN
 * fails it. That statement rides along only if it is a SELECT: had BEGIN failed, it ran
 * outside any transaction, where a read changes nothing. Anything else waits for BEGIN.
 */
class PreparingClient extends pg.Client {
  private readonly prepared = new Set<string>();
  /** A statement unanswered this long (ms) gives the connection up; 0 waits forever. */
  private readonly abandonAfterMs: number;
  /** The answer to a BEGIN sent ahead, until the statement after it takes it over. */
  private begun?: Promise<unknown>;
  /** Set while writes are held back; lets them go at the next turn if no statement came. */
  private corked?: NodeJS.Immediate;
  /** The outcome of a COMMIT sent with the transaction's last statement (`THEN_COMMIT`). */
  private committing?: Promise<unknown>;

  constructor(config?: string | (pg.ClientConfig & { abandonAfterMs?: number })) {
    super(config);
    this.abandonAfterMs = (typeof config === 'object' && config.abandonAfterMs) || 0;
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
      this.committing = commit.then(committed);
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
    if (begun === undefined) return text !== undefined && COMMIT.test(text) ? this.send(text, values).then(committed) : this.send(config, values, callback);
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
    if (this.corked === undefined && (this as { pipeline?: boolean }).pipeline) this.cork();
    const name = typeof config === 'string' && Array.isArray(values) && values.length > 0 ? this.preparedName(config) : undefined;
    const result = name === undefined ? super.query(config, values, callback) : super.query({ name, text: config, values }, callback);
    if (this.abandonAfterMs > 0 && result instanceof Promise) {
      const timer = setTimeout(() => this.abandon(), this.abandonAfterMs);
      result.then(
        () => clearTimeout(timer),
        () => clearTimeout(timer),
      );
    }
    return result;
  }

  /**
   * Gives up a connection whose server stopped answering, failing what was sent on it. pg's
   * own `query_timeout` closes the socket, and a closed socket still sends what it holds: a
   * statement held up by a network partition would reach the server once the network
   * returns, and an INSERT outside a transaction would commit for a request already answered
   * 503. A reset discards it. (A transaction's COMMIT is also covered by the server, which
   * ends the session once it has waited inside the transaction this long.)
   */
  private abandon(): void {
    const self = this as unknown as { _queryable: boolean; _errorAllQueries(err: Error): void; connection: { stream: Socket } };
    // At once: the pool must not take the client back before the socket has closed.
    self._queryable = false;
    self._errorAllQueries(Object.assign(new Error(`the database did not answer within ${this.abandonAfterMs} ms`), { code: 'ETIMEDOUT' }));
    try {
      self.connection.stream.resetAndDestroy();
    } catch {
      // Not TCP (a Unix socket): no network to hold anything back.
      self.connection.stream.destroy();
    }
  }

  /** The name `text` is prepared under on this connection; none if it is long, or the connection holds its share. */
  private preparedName(text: string): string | undefined {
    if (text.length > PREPARED_TEXT_LIMIT) return undefined;
    const name = statementName(text);
    if (!this.prepared.has(name) && this.prepared.size >= PREPARED_STATEMENTS) return undefined;
    this.prepared.add(name);
    return name;
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

/** Query parameters of a database URL that carry a credential (libpq and pg read `?password=`). */
const CREDENTIAL_PARAMETER = /pass|secret|token|key|auth|cred/i;

/**
 * Database URLs may carry passwords, after the user name or in the query string; they never
 * reach an error message or a log. The rest (host, database, options) stays, so the operator
 * can tell which database is meant.
 */
export function redactUrl(url: string): string {
  const schemeEnd = url.indexOf('://');
  if (schemeEnd === -1) return url;
  const [beforeQuery, query] = splitOnce(url, '?');
  // Up to the last `@`: a password may hold an unencoded `@` or `/`. This may hide more than
  // the password, never less.
  const at = beforeQuery.lastIndexOf('@');
  let shown = beforeQuery;
  if (at > schemeEnd) {
    const userinfo = beforeQuery.slice(schemeEnd + 3, at);
    const colon = userinfo.indexOf(':');
    if (colon !== -1) shown = `${beforeQuery.slice(0, schemeEnd + 3)}${userinfo.slice(0, colon)}:***${beforeQuery.slice(at)}`;
  }
  if (query === undefined) return shown;
  const [parameters, fragment] = splitOnce(query, '#');
  const masked = parameters
    .split('&')
    .map((parameter) => {
      const [name] = splitOnce(parameter, '=');
      return CREDENTIAL_PARAMETER.test(name) && parameter.includes('=') ? `${name}=***` : parameter;
    })
    .join('&');
  return `${shown}?${masked}${fragment === undefined ? '' : `#${fragment}`}`;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}
