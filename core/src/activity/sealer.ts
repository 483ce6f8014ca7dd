/**
 * The seal: who may extend the hash chain. On SQLite a request's records are chained in its
 * own transaction (its single writer already serialises writes). On PostgreSQL they are
 * written unchained to `activity_pending`, and a sealer loop, one per process, chains them in
 * large batches in insertion order under an advisory lock that only one process holds at a
 * time; any process takes over when another stops.
 */
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DialectName } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { CHAINED_COLUMNS, chainRecords, GENESIS_HASH, type ChainHead } from './chain.js';
import { chunks, insertValues } from '../db/insert-rows.js';
import { compiledQuery } from '../db/compiled.js';
import type { RecordRow } from './records.js';

// Both run once per commit of the group that chains reads' records: built once, not per run.
const lastRecord = compiledQuery<[], { sequence: number | string | bigint; hash: string }>(0, (db) =>
  db.selectFrom('activity_log').select(['sequence', 'hash']).orderBy('sequence', 'desc').limit(1),
);
const anyPending = compiledQuery<[], { id: unknown }>(0, (db) => db.selectFrom('activity_pending').select('id').limit(1));

/** The last record of the chain, or the genesis head of an empty log. */
export async function chainHead(db: Kysely<Database>): Promise<ChainHead> {
  const [head] = await lastRecord(db);
  return head ? { sequence: Number(head.sequence), hash: head.hash } : { sequence: 0, hash: GENESIS_HASH };
}

/** Key of the PostgreSQL advisory lock that keeps sealing, and so the chain, in one line. */
export const SEAL_LOCK_KEY = 0x61637476; // "actv"

export interface SealerOptions {
  /** Records chained per transaction. */
  batchSize?: number;
  /** Pause between looks at an empty queue (records from other processes show up this late). */
  idleMs?: number;
  /** Pause after a partial batch, so the next one is worth a transaction. */
  coalesceMs?: number;
  logger?: Logger;
  /** Seconds the sealer spent trying the seal lock. */
  observeLockWait?: (stage: 'seal', seconds: number) => void;
  /** A batch was sealed: its size, and how long its oldest record had waited. */
  observeSealed?: (records: number, lagSeconds: number) => void;
}

export class ActivitySealer {
  private readonly batchSize: number;
  private readonly idleMs: number;
  private readonly coalesceMs: number;
  private running = false;
  private loop?: Promise<void>;
  private wake?: () => void;
  /** Ends the current pause at once (stopping). */
  private interrupt?: () => void;

  constructor(
    private readonly db: Kysely<Database>,
    readonly dialect: DialectName,
    private readonly options: SealerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 5000;
    this.idleMs = options.idleMs ?? 200;
    this.coalesceMs = options.coalesceMs ?? 25;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.interrupt?.();
    await this.loop;
  }

  /** New records were written in this process: look sooner than the idle pause. */
  notify(): void {
    this.wake?.();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let sealed = 0;
      try {
        sealed = await this.sealBatch();
        failures = 0;
      } catch (err) {
        // A busy database or a lost connection: the records stay pending and are sealed later.
        failures += 1;
        this.options.logger?.warn({ err }, 'sealing activity records failed; will retry');
      }
      if (!this.running) break;
      if (sealed >= this.batchSize) continue;
      await this.pause(failures > 0 ? Math.min(5000, 100 * 2 ** failures) : sealed > 0 ? this.coalesceMs : this.idleMs);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        this.interrupt = undefined;
        resolve();
      };
      const wait = (delay: number): void => {
        clearTimeout(timer);
        timer = setTimeout(done, delay);
        // An idle sealer must not keep the process alive.
        timer.unref();
      };
      wait(ms);
      this.interrupt = done;
      // Coalesce a burst of notifications into one batch.
      this.wake = () => {
        this.wake = undefined;
        wait(this.coalesceMs);
      };
    });
  }

  /**
   * Takes the seal for the rest of `trx` if nobody holds it, without waiting. SQLite runs one
   * write transaction at a time, so there a transaction that writes always has it.
   */
  async trySeal(trx: Kysely<Database>, stage: 'seal'): Promise<boolean> {
    if (this.dialect !== 'postgres') return true;
    const started = performance.now();
    const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${SEAL_LOCK_KEY}::bigint) as locked`.execute(trx);
    this.options.observeLockWait?.(stage, (performance.now() - started) / 1000);
    return rows[0]?.locked === true;
  }

  /**
   * Whether a request may chain its own records inside its transaction. On SQLite, yes, behind
   * an empty queue (a record committed before this request began must not end up after it).
   * On PostgreSQL never: chaining needs the head, so concurrent requests would queue on it;
   * one insert into `activity_pending` costs less than the lock, the head and the chained
   * insert, and the sealer chains thousands of records per transaction.
   */
  async mayChainOnAppend(trx: Kysely<Database>): Promise<boolean> {
    if (this.dialect === 'postgres') return false;
    return (await anyPending(trx)).length === 0;
  }

  /** Chains rows onto the log's head; the caller holds the seal (`trySeal`). */
  async chain(trx: Kysely<Database>, records: readonly RecordRow[]): Promise<void> {
    if (records.length === 0) return;
    const { values } = chainRecords(await chainHead(trx), records);
    await insertValues(trx, this.dialect, 'activity_log', CHAINED_COLUMNS, values);
  }

  /** Chains one batch of pending records. Returns how many it sealed, or -1 when another process holds the seal. */
  async sealBatch(): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await this.trySeal(trx, 'seal'))) return -1;
      const pending = await trx.selectFrom('activity_pending').selectAll().orderBy('id').limit(this.batchSize).execute();
      if (pending.length === 0) return 0;
      await this.chain(
        trx,
        pending.map(({ id: _id, ...fields }) => fields),
      );
      // Exactly the rows read: on PostgreSQL a lower id may commit after this batch was read.
      for (const chunk of chunks(pending.map((p) => Number(p.id)), 1000)) await trx.deleteFrom('activity_pending').where('id', 'in', chunk).execute();
      const oldest = Math.min(...pending.map((p) => Date.parse(p.recorded_date)));
      this.options.observeSealed?.(pending.length, Math.max(0, (Date.now() - oldest) / 1000));
      return pending.length;
    });
  }

  /**
   * Seals what is committed now, for a verification that should cover it. Gives up after
   * `timeoutMs` (another process holding the seal, or a steady stream of new records).
   */
  async sealAll(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const sealed = await this.sealBatch();
      if (sealed === 0 || Date.now() > deadline) return;
      if (sealed < 0) await new Promise((r) => setTimeout(r, 20));
    }
  }
}
