/**
 * Kysely's SQLite driver, as the vault's two connections need it: the writer's transactions
 * (locks taken at BEGIN, a transaction SQLite ended by itself not run on without it, reads run
 * between them) and the reader's one shared connection.
 */
import { CompiledQuery, SqliteAdapter, SqliteDialect, type DialectAdapter, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDatabase as SqliteDialectDatabase } from 'kysely';
import type SqliteDatabase from 'better-sqlite3';
import type { WriterSnapshot } from './sqlite-reads.js';

/**
 * The writer's transactions take the file's write lock as they begin. A deferred BEGIN reads
 * first and asks for the lock at its first write; if another process (a second vault on the
 * same file, or the command line) committed in between, SQLite cannot wait for the lock, since
 * the transaction's snapshot is already stale, and fails it at once with "database is
 * locked". Taken at BEGIN, the lock is waited for (`busy_timeout`) before anything is read.
 * In one process it changes nothing: the writer is one connection, running one transaction at
 * a time.
 *
 * Migrations run in one such transaction too. Kysely's SQLite adapter runs them without one
 * (and takes no migration lock, counting on a single connection), so two vaults starting
 * together on a new file both created the first tables and one of them failed to start.
 * SQLite's DDL is transactional: the second now waits, then finds every migration applied,
 * and a migration that fails leaves nothing of itself behind.
 */
export class WriterDialect extends SqliteDialect {
  constructor(
    private readonly writerConfig: { database: SqliteDialectDatabase },
    private readonly sqlite: SqliteDatabase.Database,
    /** Reads run on the writer's connection between its transactions (`sqlite-reads.ts`). */
    private readonly snapshot: WriterSnapshot,
  ) {
    super(writerConfig);
  }

  override createDriver(): Driver {
    return new WriterDriver(this.writerConfig, this.sqlite, this.snapshot);
  }

  override createAdapter(): DialectAdapter {
    return new WriterAdapter();
  }
}

class WriterAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/**
 * SQLite may roll a whole transaction back by itself when a statement fails (a full disk, an
 * I/O error). The statements after it would then run outside any transaction, each committing
 * on its own: a store whose point committed without its activity record, had its code caught
 * the error and gone on. So once a transaction is gone, its later statements and its COMMIT
 * fail, naming the error that ended it, and ROLLBACK has nothing left to do (before, its
 * "no transaction is active" replaced the disk's error in the log).
 */
class TransactionLostError extends Error {
  constructor(cause: unknown) {
    super(`SQLite rolled the transaction back: ${cause instanceof Error ? cause.message : 'after an error'}`, { cause });
  }
}

class WriterDriver extends SqliteDriver {
  private transactionOpen = false;
  /** The last error a statement of the open transaction failed with. */
  private failure: unknown;
  private connection?: DatabaseConnection;

  constructor(
    config: { database: SqliteDialectDatabase },
    private readonly sqlite: SqliteDatabase.Database,
    private readonly snapshot: WriterSnapshot,
  ) {
    super(config);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const inner = await super.acquireConnection();
    this.connection ??= {
      executeQuery: <R>(query: CompiledQuery) => {
        this.snapshot.end();
        if (this.transactionOpen && !this.sqlite.inTransaction) return Promise.reject(new TransactionLostError(this.failure));
        // Kysely's SQLite connection fails synchronously (better-sqlite3 is), so no promise
        // is added to every statement's path to see its error.
        try {
          return inner.executeQuery<R>(query);
        } catch (err) {
          if (this.transactionOpen) this.failure = err;
          throw err;
        }
      },
      streamQuery: (query, chunkSize) => {
        this.snapshot.end();
        return inner.streamQuery(query, chunkSize);
      },
    };
    return this.connection!;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    this.transactionOpen = true;
    this.failure = undefined;
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await connection.executeQuery(CompiledQuery.raw('commit'));
    } finally {
      this.transactionOpen = false;
    }
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.transactionOpen = false;
    // A transaction SQLite ended by itself leaves the connection free, and a read may have begun there since.
    this.snapshot.end();
    if (this.sqlite.inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'));
  }
}

/**
 * The reader's driver hands its one connection to every query at once. Kysely's own SQLite
 * driver queues each query behind the one before it, so that a transaction's statements are
 * not interleaved with others; the reader runs no transactions, and each of its statements
 * runs to completion synchronously, so the queue only cost time: every release woke every
 * waiting query (64 reads arriving together made some 2,000 promise turns).
 */
export class ReaderDialect extends SqliteDialect {
  constructor(private readonly readerConfig: { database: SqliteDialectDatabase }) {
    super(readerConfig);
  }

  override createDriver(): Driver {
    return new ReaderDriver(this.readerConfig);
  }
}

class ReaderDriver extends SqliteDriver {
  private connection?: DatabaseConnection;

  override async init(): Promise<void> {
    await super.init();
    const connection = await super.acquireConnection();
    await super.releaseConnection();
    this.connection = {
      executeQuery: (query) => connection.executeQuery(query),
      streamQuery: () => {
        // An iterating statement would hold the connection across turns.
        throw new Error('the SQLite reader does not stream');
      },
    };
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection!;
  }

  override async releaseConnection(): Promise<void> {}

  override async beginTransaction(): Promise<void> {
    throw new Error('the SQLite reader runs no transactions: it reads in snapshots of one turn');
  }
}
