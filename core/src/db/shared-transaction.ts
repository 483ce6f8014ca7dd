/**
 * Writes that share one PostgreSQL transaction, on one connection, running side by side.
 *
 * A store on a connection of its own cost the vault two socket writes to the database (BEGIN
 * with its context read, then its inserts with COMMIT), each waking a server process: those
 * writes were a third of the vault's CPU per store, and the server paid a commit per store.
 * Stores that arrive together instead run concurrently on one connection in one transaction:
 * their statements of a turn leave in one write (the client pipelines them), so a group of
 * stores costs about what one did, and one commit.
 *
 * What keeps that equivalent to each store in a transaction of its own:
 * - A key (the entity a store locks) is in one group at a time, once: a write whose key is
 *   taken waits for the group that has it to end. No write sees another's uncommitted change
 *   to its entity, and writes of one entity run in the order they came.
 * - Writes start in key order, so each group takes its row locks in that order and two groups
 *   (in this process or another) cannot deadlock on them.
 * - A group commits only if every write in it succeeded. Otherwise it rolls back. A write that
 *   refused itself (a `VaultError`: a rule's block, a legal hold) decided so from its own
 *   entity's rows, which nobody else in the group touched, so that refusal stands and it does
 *   not run again (a block records its alerts outside the transaction: once). Every other
 *   write runs again alone, in a transaction of its own, for an outcome of its own: one
 *   failing write never takes another with it, and none is answered as done before its commit.
 * - A COMMIT whose outcome is unknown (the connection lost while it was under way) fails every
 *   write of the group without running any again: it may have committed.
 * - A write's `afterCommit` work (`after-commit.ts`) runs once its transaction committed, from
 *   the run that did: a group that rolled back drops what its writes left for after it.
 *
 * A write marks its last statement with `THEN_COMMIT` (`InsertBatch.run({ last: true })`); once
 * every write of a group has sent its last, the COMMIT goes out in the same socket write.
 */
import { CompiledQuery, Transaction, type DatabaseConnection, type Kysely, type KyselyProps } from 'kysely';
import { isVaultError } from '../errors.js';
import { committed, runPending, takePending, watch } from './after-commit.js';
import { THEN_COMMIT } from './connect.js';
import type { Database } from './schema.js';

export type SharedWork<T> = (trx: Transaction<Database>) => Promise<T>;

export interface SharedTransactionOptions {
  /** Writes per transaction at most. */
  groupSize?: number;
  /** Groups under way at once, each on a connection of its own. */
  concurrency?: number;
  /** Told the size of each group that committed. */
  observeGroup?: (writes: number) => void;
}

interface Queued {
  key: string;
  work: SharedWork<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Nothing of the group committed: a write failed (`outcomes`), or the server refused COMMIT. */
class RolledBack extends Error {
  constructor(
    message: string,
    readonly outcomes?: PromiseSettledResult<unknown>[],
  ) {
    super(message);
  }
}

export class SharedTransactions {
  private queue: Queued[] = [];
  /** Keys of the groups under way: a write of one of them waits for that group to end. */
  private readonly busy = new Set<string>();
  private running = 0;
  private scheduled = false;
  private readonly groupSize: number;
  private readonly concurrency: number;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: SharedTransactionOptions = {},
  ) {
    this.groupSize = options.groupSize ?? 32;
    this.concurrency = options.concurrency ?? 4;
  }

  /** Runs `work` in a transaction shared with other keys' writes; resolves after the commit. */
  run<T>(key: string, work: SharedWork<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ key, work, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.running >= this.concurrency) return;
    this.scheduled = true;
    // After this turn's I/O: every write that arrived with this one may join its group.
    setImmediate(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start(): void {
    while (this.queue.length > 0 && this.running < this.concurrency) {
      const group: Queued[] = [];
      const waiting: Queued[] = [];
      for (const queued of this.queue) {
        // A key taken (in this group or one under way) keeps its later writes in order behind it.
        if (group.length < this.groupSize && !this.busy.has(queued.key)) {
          this.busy.add(queued.key);
          group.push(queued);
        } else waiting.push(queued);
      }
      this.queue = waiting;
      if (group.length === 0) return;
      this.running += 1;
      void this.runGroup(group.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))).finally(() => {
        for (const queued of group) this.busy.delete(queued.key);
        this.running -= 1;
        this.schedule();
      });
    }
  }

  private async runGroup(group: Queued[]): Promise<void> {
    if (group.length === 1) {
      await this.alone(group[0]);
      return;
    }
    let outcomes: PromiseSettledResult<unknown>[];
    try {
      outcomes = await this.db.getExecutor().provideConnection((connection) => this.together(connection, group));
    } catch (err) {
      if (!(err instanceof RolledBack)) {
        // The COMMIT's outcome is unknown, or the connection could not be had: running the
        // writes again could do them twice.
        for (const queued of group) queued.reject(err);
        return;
      }
      // Nothing of the group committed: a refusal stands, every other write runs again alone.
      await Promise.all(
        group.map((queued, i) => {
          const outcome = err.outcomes?.[i];
          if (outcome?.status === 'rejected' && isVaultError(outcome.reason)) {
            queued.reject(outcome.reason);
            return undefined;
          }
          return this.alone(queued);
        }),
      );
      return;
    }
    this.options.observeGroup?.(group.length);
    group.forEach((queued, i) => {
      const outcome = outcomes[i];
      if (outcome.status === 'fulfilled') queued.resolve(outcome.value);
      else queued.reject(outcome.reason);
    });
  }

  private async alone(queued: Queued): Promise<void> {
    try {
      queued.resolve(await committed(this.db, queued.work));
    } catch (err) {
      queued.reject(err);
    }
  }

  /**
   * Runs the group's writes side by side in one transaction on `connection` and resolves to
   * their outcomes once it committed. Throws `RolledBack` when nothing of it committed (a write
   * failed, or COMMIT was refused), and the connection's error when COMMIT's outcome is unknown.
   */
  private async together(connection: DatabaseConnection, group: Queued[]): Promise<PromiseSettledResult<unknown>[]> {
    let commit: Promise<unknown> | undefined;
    let finished = 0;
    // Each write gets a Transaction of its own over the shared connection, so that what one
    // write does (its last statement, a statement after it) is told apart from the others'.
    const transactionOf = () => {
      let last = false;
      const own: DatabaseConnection = {
        executeQuery: <R>(query: CompiledQuery) => {
          // After its last statement the write has nothing to say, and after COMMIT a
          // statement would run outside the transaction.
          if (last || commit !== undefined) return Promise.reject(new Error('a statement after the write’s last one'));
          if (!query.sql.startsWith(THEN_COMMIT)) return connection.executeQuery<R>(query);
          last = true;
          const result = connection.executeQuery<R>({ ...query, sql: query.sql.slice(THEN_COMMIT.length) });
          // Every write has sent its last statement: COMMIT leaves in the same socket write.
          if (++finished === group.length) commit = connection.executeQuery(CompiledQuery.raw('commit'));
          return result;
        },
        streamQuery: () => {
          throw new Error('a shared transaction does not stream');
        },
      };
      const executor = this.db.getExecutor().withConnectionProvider({ provideConnection: (consume) => consume(own) });
      // Without Kysely's queue of one statement at a time, so that the writes' statements can
      // go out together. Transactions never reach the driver or the dialect (they cannot
      // begin, nest or destroy anything).
      const trx = new Transaction<Database>({ config: {}, driver: {}, dialect: {}, executor } as unknown as KyselyProps);
      watch(trx);
      return trx;
    };
    await connection.executeQuery(CompiledQuery.raw('begin'));
    const transactions = group.map(transactionOf);
    const outcomes = await Promise.allSettled(group.map((queued, i) => queued.work(transactions[i])));
    if (commit === undefined) {
      if (outcomes.some((o) => o.status === 'rejected')) {
        // Should the ROLLBACK not arrive, the server rolls back when the connection goes.
        await connection.executeQuery(CompiledQuery.raw('rollback')).catch(() => {});
        throw new RolledBack('a write of the shared transaction failed', outcomes);
      }
      commit = connection.executeQuery(CompiledQuery.raw('commit'));
    }
    try {
      await commit;
    } catch (err) {
      // Refused by the server (after a failed statement it answers COMMIT with ROLLBACK, which
      // the client reports as an error of class 40): nothing committed. A lost connection
      // leaves the outcome unknown.
      if (isServerError(err)) throw new RolledBack('the shared transaction was rolled back', outcomes);
      throw err;
    }
    // Committed: a write that failed after sending its last statement broke the THEN_COMMIT
    // contract, and its caller is told so, but the statements it sent are durable (and so is
    // what it left for after the commit).
    for (const trx of transactions) runPending(takePending(trx));
    return outcomes;
  }
}

/** An error the server sent (it has a SQLSTATE), as opposed to a connection that failed. */
function isServerError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08') && !code.startsWith('57P');
}
