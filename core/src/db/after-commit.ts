/**
 * Work that must wait until a write's transaction has committed, and must not happen at all
 * when it rolls back: the domain counters of `/metrics`, say. A write may run twice (a shared
 * transaction that rolled back, then the write alone; an audit request run again after a
 * conflict), and only its committed run may count.
 *
 * Whoever commits a write's transaction keeps such work for that write and runs it once the
 * commit is durable, before the write is answered; a rollback drops it. That is the write
 * group (per write: on SQLite writes share a transaction, each in a savepoint of its own), the
 * shared transactions of PostgreSQL, and `committed` for a transaction of one's own.
 *
 * The work is kept on the transaction object as (job, argument) pairs: a write registers
 * nothing but its arguments, no closure of its own, and a write that registers nothing costs
 * one property.
 */
import type { Kysely, Transaction } from 'kysely';
import { isSerializationFailure } from './dialect.js';
import type { Database } from './schema.js';

const PENDING = Symbol('vault.afterCommit');

/** Jobs run after the commit, while the write waits for its answer: they must not throw. */
export type CommitJob<A> = (arg: A) => void;

/**
 * Jobs and their arguments, alternating. `null`: the transaction is watched, nothing
 * registered yet; `undefined` (no property): nobody will tell this transaction's commit.
 */
export type Pending = unknown[] | null;

interface Watched {
  [PENDING]?: Pending;
}

/**
 * Runs `job(arg)` once `trx` has committed, never if it rolls back. In a transaction whose
 * commit nobody watches (one begun with `db.transaction()` directly) it runs at once.
 */
export function afterCommit<A>(trx: Kysely<Database>, job: CommitJob<A>, arg: A): void {
  const watched = trx as Watched;
  const pending = watched[PENDING];
  if (pending === undefined) job(arg);
  else if (pending === null) watched[PENDING] = [job, arg];
  else pending.push(job, arg);
}

/** Begins keeping `afterCommit` work of `trx` (again, for the next write that shares it). */
export function watch(trx: Kysely<Database>): void {
  (trx as Watched)[PENDING] = null;
}

/** The work kept for `trx` since `watch`, which starts over. */
export function takePending(trx: Kysely<Database>): Pending {
  const watched = trx as Watched;
  const pending = watched[PENDING] ?? null;
  watched[PENDING] = null;
  return pending;
}

/** Call once the work's transaction has committed. */
export function runPending(pending: Pending): void {
  if (pending === null) return;
  for (let i = 0; i < pending.length; i += 2) (pending[i] as CommitJob<unknown>)(pending[i + 1]);
}

/** Runs of a transaction PostgreSQL ended as a deadlock's victim (or a serialization failure) before the request is refused. */
export const DEADLOCK_ATTEMPTS = 4;

/**
 * `db.transaction().execute(work)`, then the work's `afterCommit` jobs once it committed.
 *
 * PostgreSQL ends a deadlock by failing one of its transactions (40P01); writers take their
 * locks in one order (tags: `holdTagsAgainstDelete`) so that none should arise, but one
 * spanning processes and shared transactions cannot be ruled out everywhere. The victim is
 * rolled back whole, its activity records and `afterCommit` work with it, so it runs again
 * from the start, in a new transaction: recorded and answered once. Still failing after
 * `DEADLOCK_ATTEMPTS`, the error stands: it is answered as busy (503, `storageFailure`),
 * never as a fault of the vault.
 */
export async function committed<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let used: Transaction<Database> | undefined;
    try {
      const value = await db.transaction().execute((trx) => {
        watch(trx);
        used = trx;
        return work(trx);
      });
      runPending(takePending(used!));
      return value;
    } catch (err) {
      if (!isSerializationFailure(err) || attempt >= DEADLOCK_ATTEMPTS) throw err;
    }
  }
}
