/**
 * Write transactions that share a commit. On SQLite a commit writes every page its
 * transaction dirtied to the log, and a store dirties a dozen (the point, its indexes, its
 * activity record and theirs) of which most are the same pages the next store dirties: one
 * commit per store cost a quarter of a store's time. Writes on SQLite run one at a time on one
 * connection anyway, so those that arrive together run one after the other in one transaction,
 * each inside its own savepoint: one that fails rolls back alone, and each is answered only
 * once the shared commit is durable (a failed commit fails them all; none is answered as done).
 *
 * PostgreSQL runs concurrent transactions on its own connections: each write keeps its own.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

interface Queued {
  work: (trx: Transaction<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Writes per shared transaction: bounds how long the first of them waits for its answer. */
const GROUP_LIMIT = 64;

export class WriteGroup {
  private queue: Queued[] = [];
  private flushing = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /** Runs `work` in a transaction of its own or in a savepoint of a shared one; resolves after the commit. */
  transaction<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    if (this.dialect === 'postgres') return this.db.transaction().execute(work);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        let group: Queued[] = [];
        const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
        try {
          await this.db.transaction().execute(async (trx) => {
            // Taken once the connection is ours, so what queued while waiting for it rides along.
            group = this.queue.splice(0, GROUP_LIMIT);
            for (const item of group) {
              await sql`savepoint write_group`.execute(trx);
              try {
                const value = await item.work(trx);
                await sql`release write_group`.execute(trx);
                outcomes.push({ ok: true, value });
              } catch (error) {
                await sql`rollback to write_group`.execute(trx);
                await sql`release write_group`.execute(trx);
                outcomes.push({ ok: false, error });
              }
            }
          });
        } catch (err) {
          for (const item of group) item.reject(err);
          continue;
        }
        group.forEach((item, i) => {
          const outcome = outcomes[i];
          if (outcome.ok) item.resolve(outcome.value);
          else item.reject(outcome.error);
        });
      }
    } finally {
      this.flushing = false;
    }
  }
}
