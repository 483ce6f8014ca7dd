/**
 * WAL checkpoints on a thread of their own. In WAL mode every commit appends pages to the
 * log, and a checkpoint copies them back into the database file and syncs it. SQLite runs
 * checkpoints inside the commit that crosses `wal_autocheckpoint`, which on the writer means
 * the event loop: every 16 MiB of log, one request's commit stalled every request for the
 * copy and two syncs, and under load that was a twelfth of the main thread (profiled on a
 * subject read). Here a worker thread with its own connection runs PASSIVE checkpoints, which
 * never wait for and never block readers or the writer.
 *
 * The writer keeps a checkpoint threshold of its own, four times the usual one, and it is
 * still needed: SQLite starts the log over from its beginning only when a write begins with
 * every page already copied, and a steady stream of group commits never leaves the thread
 * that moment (an earlier try without the threshold saw the log pass 1 GB). At the threshold
 * the writer's own checkpoint finds nearly everything copied, syncs, and the next write
 * starts the log over; should the thread die, the log is still bounded, as it was before.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What the thread reports through shared memory; read at scrape time. */
export interface CheckpointStats {
  /** Checkpoints that copied pages back into the database file. */
  checkpoints: number;
  /** Pages in the log when the last checkpoint ran. */
  walPages: number;
  /** Of those, pages already copied into the database file. */
  copiedPages: number;
}

/** Slots of the shared counters. */
const STOP = 0;
const CHECKPOINTS = 1;
const WAL_PAGES = 2;
const COPIED_PAGES = 3;
const SLOTS = 4;

/**
 * Plain JavaScript evaluated as the worker, so the same code runs from the TypeScript sources
 * (tests) and from the build, without a loader in the thread.
 */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const state = new Int32Array(workerData.state);
const db = new Database(workerData.path, { fileMustExist: true });
try {
  while (Atomics.load(state, ${STOP}) === 0) {
    let result;
    try {
      [result] = db.pragma('wal_checkpoint(PASSIVE)');
    } catch (err) {
      // Another connection checkpointing or changing the schema: the next round will do.
      if (!/^SQLITE_(BUSY|LOCKED)/.test(err.code)) throw err;
    }
    if (result && result.log >= 0) {
      // A shorter log than last time was restarted by the writer: its count starts again.
      const before = result.log < Atomics.load(state, ${WAL_PAGES}) ? 0 : Atomics.load(state, ${COPIED_PAGES});
      if (result.checkpointed > before) Atomics.add(state, ${CHECKPOINTS}, 1);
      Atomics.store(state, ${WAL_PAGES}, result.log);
      Atomics.store(state, ${COPIED_PAGES}, result.checkpointed);
    }
    Atomics.wait(state, ${STOP}, 0, workerData.intervalMs);
  }
} finally {
  db.close();
}
`;

export interface CheckpointerOptions {
  /** How often the thread checkpoints. */
  intervalMs?: number;
  /** Told when the thread fails; the writer's own threshold then keeps the log bounded. */
  onError?: (err: Error) => void;
}

export class WalCheckpointer {
  private readonly state = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(path: string, { intervalMs = 100, onError }: CheckpointerOptions = {}) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), path, state: this.state.buffer, intervalMs },
      // The thread only needs its connection's page cache, not a second heap of the default size.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    // A vault that forgets to close must not be kept alive by its checkpoints.
    this.worker.unref();
    this.exited = new Promise((resolve) => {
      this.worker.once('exit', () => resolve());
      this.worker.once('error', (err) => onError?.(err));
    });
  }

  stats(): CheckpointStats {
    return {
      checkpoints: Atomics.load(this.state, CHECKPOINTS),
      walPages: Atomics.load(this.state, WAL_PAGES),
      copiedPages: Atomics.load(this.state, COPIED_PAGES),
    };
  }

  /** Ends the thread after its current checkpoint and closes its connection. */
  async stop(): Promise<void> {
    Atomics.store(this.state, STOP, 1);
    Atomics.notify(this.state, STOP);
    // Waiting for the exit must keep the process alive until it comes.
    this.worker.ref();
    await this.exited;
  }
}
