/**
 * How the vault's reads get their snapshots on SQLite. Statements of one turn of the event loop
 * share a read transaction: a statement on its own is a transaction of its own, and in WAL mode
 * beginning and ending one takes and releases file locks, system calls that cost several times
 * a point lookup (8 µs against 1 µs on the benchmark's machine). Ending it every turn keeps
 * checkpoints from being held back, and lets commits of other processes be seen from the next
 * turn on.
 *
 * Reads run on the writer's own connection whenever it is not inside a write transaction.
 * SQLite empties a connection's whole page cache when it begins a read after another
 * connection committed, and under load the writer commits every turn (the reads' records), so
 * a separate reader began nearly every turn with an empty cache and read each page from the
 * file again: a point's select cost twice what it costs where the cache stays. The writer's
 * own commits leave its cache as it is. The reader connection takes the reads that come while
 * a write transaction is open on the writer (other requests run between its statements), which
 * must not see its uncommitted rows.
 */
import type SqliteDatabase from 'better-sqlite3';
import type { SqliteDatabase as SqliteDialectDatabase } from 'kysely';

/** Counts the statements that may change the database, run through this process's writer. */
export class WriteCounter {
  count = 0;
}

/**
 * A read transaction on the writer's connection for the rest of the turn. The writer ends it
 * before it runs any statement of its own (`WriterDriver`): a write run inside it would not
 * commit until the turn's end, and BEGIN would fail.
 */
export class WriterSnapshot {
  private open = false;
  private ending?: NodeJS.Immediate;

  constructor(private readonly sqlite: SqliteDatabase.Database) {}

  /** Reads may run on the writer's connection: no write transaction is open there. */
  get available(): boolean {
    return this.open || !this.sqlite.inTransaction;
  }

  enter(): void {
    if (this.open) return;
    this.sqlite.exec('begin');
    this.open = true;
    this.ending ??= setImmediate(() => {
      this.ending = undefined;
      this.end();
    });
  }

  end(): void {
    if (!this.open) return;
    this.open = false;
    if (!this.sqlite.open || !this.sqlite.inTransaction) return;
    try {
      this.sqlite.exec('commit');
    } catch {
      // A read transaction has nothing to keep; the writer must not find one open.
      this.sqlite.exec('rollback');
    }
  }

  close(): void {
    if (this.ending) clearImmediate(this.ending);
    this.ending = undefined;
    this.end();
  }
}

/** The reader's statements: on the writer's connection when it is free (see above), else on the reader's. */
export function readingOnWriterWhenFree(writer: SqliteDialectDatabase, snapshot: WriterSnapshot, reader: SqliteDialectDatabase): SqliteDialectDatabase {
  return {
    close: () => {
      snapshot.close();
      reader.close();
    },
    prepare(text: string) {
      if (!snapshot.available) return reader.prepare(text);
      snapshot.enter();
      return writer.prepare(text);
    },
  };
}

/**
 * The reader connection's snapshot of the turn, given up as soon as this process's writer has
 * run anything that may change the database, so a read never misses a commit made through this
 * process before it.
 */
export function readingByTurns(inner: SqliteDialectDatabase, sqlite: SqliteDatabase.Database, writes: WriteCounter): SqliteDialectDatabase {
  let writesSeen = -1;
  let ending: NodeJS.Immediate | undefined;
  const end = (): boolean => {
    if (!sqlite.inTransaction) return true;
    try {
      sqlite.exec('commit');
      return true;
    } catch {
      // Ending a read-only snapshot has nothing to lose; should it fail, it is tried next turn.
      return false;
    }
  };
  const endOfTurn = (): void => {
    ending = undefined;
    if (!end()) ending = setImmediate(endOfTurn);
  };
  return {
    close: () => {
      if (ending) clearImmediate(ending);
      inner.close();
    },
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
