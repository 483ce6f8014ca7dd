/**
 * Writing activity records inside the operation's transaction: chained at once on SQLite,
 * whose single writer already orders transactions; unchained into `activity_pending` for the
 * sealer on PostgreSQL, so that no request waits for another's transaction.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { nowIso } from '../util/time.js';
import type { ActivityLog, ActivityRecord } from './log.js';
import { CommitQueue } from '../db/commit-queue.js';
import { INSERT_CHUNK, InsertBatch, insertRows } from '../db/insert-rows.js';
import { toRecordRow } from './records.js';
import type { ActivitySealer } from './sealer.js';

export interface AppenderHooks {
  /** Seconds a read's records waited in the group-commit queue before being written. */
  observeQueueWait?: (seconds: number) => void;
}

interface Queued {
  records: ActivityRecord[];
  queuedAt: number;
}

export class PendingActivityLog implements ActivityLog {
  /**
   * One transaction per round for every read queued since the last one: under load a round
   * carries hundreds of records for the price of one commit. On PostgreSQL a round is one
   * INSERT without BEGIN and COMMIT (two round trips fewer), so it takes what fits in one.
   */
  private readonly reads: CommitQueue<Queued, void, Kysely<Database>>;

  constructor(
    db: Kysely<Database>,
    private readonly sealer: ActivitySealer,
    private readonly hooks: AppenderHooks = {},
  ) {
    const autocommit = sealer.dialect === 'postgres';
    this.reads = new CommitQueue<Queued, void, Kysely<Database>>(
      db,
      async (executor, batch) => {
        const started = performance.now();
        const taken = autocommit ? this.oneStatement(batch) : batch;
        if (this.hooks.observeQueueWait) for (const q of taken) this.hooks.observeQueueWait((started - q.queuedAt) / 1000);
        const records = taken.flatMap((q) => q.records);
        if (!autocommit) {
          await this.append(executor, records);
        } else if (records.length <= INSERT_CHUNK) {
          // Reads carry no event ids: their unchained rows are one INSERT, its own transaction.
          const recordedDate = nowIso();
          await insertRows(executor, this.sealer.dialect, 'activity_pending', records.map((r) => toRecordRow(r, recordedDate)));
          this.sealer.notify();
        } else {
          await executor.transaction().execute((trx) => this.append(trx, records));
        }
        return taken.map(() => ({ ok: true as const, value: undefined }));
      },
      Infinity,
      !autocommit,
    );
  }

  /** The first reads whose records fit one INSERT (at least one read: a larger one gets a transaction of its own). */
  private oneStatement(batch: Queued[]): Queued[] {
    let rows = batch[0].records.length;
    let n = 1;
    while (n < batch.length && rows + batch[n].records.length <= INSERT_CHUNK) rows += batch[n++].records.length;
    return batch.slice(0, n);
  }

  async append(trx: Kysely<Database>, records: ActivityRecord[], inserts?: InsertBatch): Promise<void> {
    if (records.length === 0) return;
    // Outside a transaction the record could commit without the operation it describes.
    if (!trx.isTransaction) throw new Error('activity records must be appended inside a transaction');
    const recordedDate = nowIso();
    const rows = records.map((r) => toRecordRow(r, recordedDate));
    const named = rows.filter((_, i) => records[i].eventId !== undefined).map((r) => ({ recorded_by: r.recorded_by, event_id: r.event_id, summary: r.summary }));
    if (await this.sealer.mayChainOnAppend(trx)) {
      await insertRows(trx, this.sealer.dialect, 'activity_event_ids', named);
      await this.sealer.chain(trx, rows);
      return;
    }
    const batch = inserts ?? new InsertBatch(this.sealer.dialect);
    batch.add('activity_event_ids', named);
    batch.add('activity_pending', rows);
    if (!inserts) await batch.run(trx);
    this.sealer.notify();
  }

  record(records: ActivityRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.reads.submit({ records, queuedAt: performance.now() });
  }
}
