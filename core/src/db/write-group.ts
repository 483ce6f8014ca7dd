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
import { CommitQueue, type Outcome } from './commit-queue.js';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

type Work = (trx: Transaction<Database>) => Promise<unknown>;

/**
 * What one shared transaction takes on, so that the first write in it is not kept waiting
 * for its answer: at most this many writes, and no new one once this much time has gone. A
 * store takes a fraction of a millisecond; a bulk of a thousand audit events tens of them,
 * and gains nothing from company (it is one large transaction already).
 */
const GROUP_LIMIT = 64;
export const GROUP_BUDGET_MS = 20;

export class WriteGroup {
  private readonly queue: CommitQueue<Work, unknown>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
    /** No new write joins a shared transaction once this much time has gone. */
    budgetMs = GROUP_BUDGET_MS,
  ) {
    this.queue = new CommitQueue(db, (trx, works) => runInSavepoints(trx, works, budgetMs), GROUP_LIMIT);
  }

  /** Runs `work` in a transaction of its own or in a savepoint of a shared one; resolves after the commit. */
  transaction<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    if (this.dialect === 'postgres') return this.db.transaction().execute(work);
    return this.queue.submit(work) as Promise<T>;
  }
}

async function runInSavepoints(trx: Transaction<Database>, works: Work[], budgetMs: number): Promise<Outcome<unknown>[]> {
  const outcomes: Outcome<unknown>[] = [];
  const started = performance.now();
  for (const work of works) {
    if (outcomes.length > 0 && performance.now() - started > budgetMs) break;
    await sql`savepoint write_group`.execute(trx);
    try {
      const value = await work(trx);
      await sql`release write_group`.execute(trx);
      outcomes.push({ ok: true, value });
    } catch (error) {
      await sql`rollback to write_group`.execute(trx);
      await sql`release write_group`.execute(trx);
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
}
