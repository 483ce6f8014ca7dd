/**
 * Work that shares a transaction with whatever else arrived meanwhile: items queue up, and
 * once per turn of the event loop one transaction takes every item queued by the time it has
 * the connection. Each item is settled only after that transaction committed (or with the
 * transaction's error when it failed), so nothing is answered as done before it is durable.
 * Work that is one statement can run without an explicit transaction (`transaction: false`):
 * a statement is its own transaction, and BEGIN and COMMIT would be two more round trips.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

interface Queued<I, R> {
  item: I;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

/** `E` is what `work` runs on: the round's transaction, or with `transaction: false` the database. */
export class CommitQueue<I, R, E extends Kysely<Database> = Transaction<Database>> {
  private queue: Queued<I, R>[] = [];
  private flushing = false;

  constructor(
    private readonly db: Kysely<Database>,
    /**
     * Does the items' work in the shared transaction: one outcome per item, in order. It may
     * stop early (outcomes for a prefix only); the items it left are first in the next round.
     */
    private readonly work: (executor: E, items: I[]) => Promise<Outcome<R>[]>,
    /** Items per transaction: bounds how long the first of them waits for its answer. */
    private readonly limit = Infinity,
    /** When false, `work` gets the database itself and must commit its items in one statement. */
    private readonly transaction = true,
  ) {}

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // After this turn's I/O: every request that arrived with this one joins its commit.
        setImmediate(() => void this.flush());
      }
    });
  }

  /**
   * One round per turn of the event loop: between rounds the process reads new requests and
   * writes answers, instead of draining the queue while every connection waits unread.
   */
  private async flush(): Promise<void> {
    let taken: Queued<I, R>[] = [];
    let outcomes: Outcome<R>[] = [];
    try {
      const round = async (executor: E) => {
        // Taken once the connection is ours, so what queued while waiting for it rides along.
        taken = this.queue.splice(0, this.limit);
        outcomes = await this.work(
          executor,
          taken.map((q) => q.item),
        );
      };
      if (this.transaction) await this.db.transaction().execute((trx) => round(trx as unknown as E));
      else await round(this.db as E);
      this.queue.unshift(...taken.slice(outcomes.length));
      outcomes.forEach((outcome, i) => {
        if (outcome.ok) taken[i].resolve(outcome.value);
        else taken[i].reject(outcome.error);
      });
    } catch (err) {
      // The transaction failed before the round took its items: BEGIN itself (SQLite's write
      // lock held by another process past the busy timeout). Those waiting fail with it, none
      // of their work having run; retrying at once would wait on the lock forever.
      if (taken.length === 0) taken = this.queue.splice(0, this.limit);
      for (const q of taken) q.reject(err);
    } finally {
      if (this.queue.length > 0) setImmediate(() => void this.flush());
      else this.flushing = false;
    }
  }
}
