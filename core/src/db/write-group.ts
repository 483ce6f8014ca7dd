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
import { committed, runPending, takePending, watch, type Pending } from './after-commit.js';
import { CommitQueue, type Outcome } from './commit-queue.js';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';
import { SharedTransactions, type SharedTransactionOptions, type SharedWork } from './shared-transaction.js';

type Work = SharedWork<unknown>;
/** A write's result on SQLite, with its `afterCommit` work, for when the shared commit is durable. */
interface Done {
  value: unknown;
  pending: Pending;
}

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
  private readonly queue?: CommitQueue<Work, Done>;
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
   * then it does not run again. Its `afterCommit` work runs once, after the commit of the run
   * that committed, before it is answered.
   */
  transaction<T>(work: (trx: Transaction<Database>) => Promise<T>, entityId?: string): Promise<T> {
    if (this.shared) return entityId === undefined ? committed(this.db, work) : this.shared.run(entityId, work);
    return this.queue!.submit(work).then(answer) as Promise<T>;
  }
}

/** The shared commit is durable: the write's own `afterCommit` work, then its answer. */
function answer(done: Done): unknown {
  runPending(done.pending);
  return done.value;
}

async function runInSavepoints(trx: Transaction<Database>, works: Work[], budgetMs: number): Promise<Outcome<Done>[]> {
  const outcomes: Outcome<Done>[] = [];
  const started = performance.now();
  for (const work of works) {
    if (outcomes.length > 0 && performance.now() - started > budgetMs) break;
    await sql`savepoint write_group`.execute(trx);
    // The writes share `trx`, one after the other: what each leaves for after the commit is its own.
    watch(trx);
    try {
      const value = await work(trx);
      await sql`release write_group`.execute(trx);
      outcomes.push({ ok: true, value: { value, pending: takePending(trx) } });
    } catch (error) {
      // Rolled back to its savepoint: nothing of it commits, so nothing of it is counted.
      takePending(trx);
      await sql`rollback to write_group`.execute(trx);
      await sql`release write_group`.execute(trx);
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
}
