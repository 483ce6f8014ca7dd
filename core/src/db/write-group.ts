/**
 * Write transactions that share a commit. On SQLite a commit writes every page its
 * transaction dirtied to the log, and a store dirties a dozen (the point, its indexes, its
 * activity record and theirs) of which most are the same pages the next store dirties: one
 * commit per store cost a quarter of a store's time. Writes on SQLite run one at a time on one
 * connection anyway, so those that arrive together run one after the other in one transaction,
 * each inside its own savepoint: one that fails rolls back alone, and each is answered only
 * once the shared commit is durable (a failed commit fails them all; none is answered as done).
 *
 * On PostgreSQL, writes that name the entity they lock share a transaction too, running side
 * by side on one connection (`SharedTransactions`); other writes keep a transaction of their own.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { CommitQueue, type Outcome } from './commit-queue.js';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';
import { SharedTransactions, type SharedTransactionOptions, type SharedWork } from './shared-transaction.js';

type Work = SharedWork<unknown>;

/**
 * What one shared transaction takes on, so that the first write in it is not kept waiting
 * for its answer: at most this many writes, and no new one once this much time has gone. A
 * store takes a fraction of a millisecond; a bulk of a thousand audit events tens of them,
 * and gains nothing from company (it is one large transaction already).
 */
const GROUP_LIMIT = 64;
export const GROUP_BUDGET_MS = 20;

export interface WriteGroupOptions {
  /** SQLite: no new write joins a shared transaction once this much time has gone. */
  budgetMs?: number;
  /** PostgreSQL: how writes that name their entity share transactions. */
  shared?: SharedTransactionOptions;
}

export class WriteGroup {
  private readonly queue?: CommitQueue<Work, unknown>;
  private readonly shared?: SharedTransactions;

  constructor(
    private readonly db: Kysely<Database>,
    dialect: DialectName,
    { budgetMs = GROUP_BUDGET_MS, shared }: WriteGroupOptions = {},
  ) {
    if (dialect === 'postgres') this.shared = new SharedTransactions(db, shared);
    else this.queue = new CommitQueue(db, (trx, works) => runInSavepoints(trx, works, budgetMs), GROUP_LIMIT);
  }

  /**
   * Runs `work` in a transaction of its own or shared with others; resolves after the commit.
   * `entityId`: the one entity whose row the work locks, if so. On PostgreSQL only such works
   * share transactions (never two of one entity). `work` may run twice: once in a shared
   * transaction that then rolled back, and again alone; a `VaultError` it threw stands, and
   * then it does not run again.
   */
  transaction<T>(work: (trx: Transaction<Database>) => Promise<T>, entityId?: string): Promise<T> {
    if (this.shared) return entityId === undefined ? this.db.transaction().execute(work) : this.shared.run(entityId, work);
    return this.queue!.submit(work) as Promise<T>;
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
