/**
 * Opening many values at once off the event loop. A subject read opens twenty values, and in
 * Node 20 each costs a `Decipheriv` of its own (key schedule, GHASH tables, a stream object):
 * a third of the vault's CPU for such a read. The vault's one JavaScript thread was the limit
 * while the machine's other cores had room, so reads of several values send them to a thread
 * of their own, which costs the event loop a message instead. A read of one value is opened
 * where it is: the message costs more than the value.
 *
 * The values are opened with the same `open` either way, and a value that fails to
 * authenticate fails the same way. Should the thread die, values are opened inline again.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { DATA_KEY_BYTES, EnvelopeError, openValue } from './envelope.js';

export interface SealedValue {
  dataKey: Buffer;
  /** As SQLite answers it (hex text) or as PostgreSQL does (bytes). */
  sealed: Buffer | string;
  dataPointId: string;
  attribute: string;
}

/** Sent to the opening thread: data keys side by side, and for each value which key opens it. */
export interface OpenRequest {
  id: number;
  keys: Uint8Array;
  keyOf: number[];
  sealed: string[];
  ids: string[];
  attributes: string[];
}

export type OpenReply = { id: number; json: string } | { id: number; failed: number };

/** Thrown for the value at `index`, which does not authenticate under its key. */
export class OpenError extends EnvelopeError {
  constructor(readonly index: number) {
    super('ciphertext does not authenticate');
  }
}

export interface OpenerOptions {
  /** Threads that open values; 0 opens everything on the event loop. */
  threads: number;
  logger: Logger;
}

interface Waiting {
  worker: Worker;
  values: readonly SealedValue[];
  resolve: (values: unknown[]) => void;
  reject: (err: Error) => void;
}

/** Values a read must have for it to go to a thread: below it the message costs more than they do. */
const MIN_VALUES = 4;

/** After a thread stops on its own, how long values are opened inline before another starts. */
const RESTART_AFTER_MS = 10_000;

/**
 * Compiled, the thread runs `open-worker.js` beside this file. Run from source (tests, `npm run
 * dev`), a thread does not inherit tsx's loader, so it registers tsx before importing the source.
 */
function newWorker(): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./open-worker.js', import.meta.url));
  const source = JSON.stringify(new URL('./open-worker.ts', import.meta.url).href);
  // Resolved here: the evaluated code would resolve it from the working directory.
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then((tsx) => { tsx.register(); return import(${source}); });`, { eval: true });
}

export class ValueOpener {
  /** Started on the first read that needs one: a thread is some 17 MB a vault may never use. */
  private readonly workers: Worker[] = [];
  private readonly waiting = new Map<number, Waiting>();
  /** Reads waiting on each thread. */
  private readonly inFlight = new Map<Worker, number>();
  private nextId = 0;
  private turn = 0;
  private restartAt = 0;
  private closed = false;

  constructor(private readonly options: OpenerOptions) {}

  /** The values, in order. Rejects with an `OpenError` naming the first that fails to authenticate. */
  async open(values: readonly SealedValue[]): Promise<unknown[]> {
    const worker = values.length >= MIN_VALUES ? this.pick() : undefined;
    if (!worker) return openInline(values);
    const request = toRequest(this.nextId++, values);
    return new Promise((resolve, reject) => {
      this.waiting.set(request.id, { worker, values, resolve, reject });
      this.busy(worker, 1);
      worker.postMessage(request, [request.keys.buffer as ArrayBuffer]);
    });
  }

  /** Reads still with a thread are opened here as it stops, so none fails for the closing. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map((w) => w.terminate()));
  }

  private pick(): Worker | undefined {
    if (this.closed) return undefined;
    if (this.workers.length < this.options.threads && Date.now() >= this.restartAt) this.workers.push(this.start());
    if (this.workers.length === 0) return undefined;
    return this.workers[this.turn++ % this.workers.length];
  }

  private start(): Worker {
    const worker = newWorker();
    this.inFlight.set(worker, 0);
    worker.unref();
    worker.on('message', (reply: OpenReply) => this.answer(reply));
    const stopped = (err?: Error) => {
      const at = this.workers.indexOf(worker);
      if (at === -1) return;
      this.workers.splice(at, 1);
      this.inFlight.delete(worker);
      if (!this.closed) {
        this.restartAt = Date.now() + RESTART_AFTER_MS;
        this.options.logger.warn({ err }, 'a value-opening thread stopped; reads are opened on the event loop until another starts');
      }
      for (const [id, waiting] of this.waiting) {
        if (waiting.worker !== worker) continue;
        this.waiting.delete(id);
        try {
          waiting.resolve(openInline(waiting.values));
        } catch (e) {
          waiting.reject(e as Error);
        }
      }
    };
    worker.on('error', stopped);
    worker.on('exit', () => stopped());
    return worker;
  }

  /**
   * A thread keeps the process alive only while a read waits on it: idle, it must not keep a
   * finished process running, and busy, a command awaiting a read must not exit under it.
   */
  private busy(worker: Worker, change: 1 | -1): void {
    const count = (this.inFlight.get(worker) ?? 0) + change;
    this.inFlight.set(worker, count);
    if (count === 1 && change === 1) worker.ref();
    else if (count === 0) worker.unref();
  }

  private answer(reply: OpenReply): void {
    const waiting = this.waiting.get(reply.id);
    if (!waiting) return;
    this.waiting.delete(reply.id);
    this.busy(waiting.worker, -1);
    if ('failed' in reply) return waiting.reject(new OpenError(reply.failed));
    let values: unknown;
    try {
      values = JSON.parse(reply.json);
    } catch (err) {
      return waiting.reject(err as Error);
    }
    if (!Array.isArray(values) || values.length !== waiting.values.length) {
      return waiting.reject(new Error('the value-opening thread answered the wrong number of values'));
    }
    waiting.resolve(values);
  }
}

function toRequest(id: number, values: readonly SealedValue[]): OpenRequest {
  const keyIndex = new Map<Buffer, number>();
  const keyOf: number[] = [];
  for (const v of values) {
    let at = keyIndex.get(v.dataKey);
    if (at === undefined) keyIndex.set(v.dataKey, (at = keyIndex.size));
    keyOf.push(at);
  }
  // Its own memory: a Buffer cut from Node's shared pool would carry the whole pool along.
  const keys = Buffer.allocUnsafeSlow(keyIndex.size * DATA_KEY_BYTES);
  for (const [key, at] of keyIndex) key.copy(keys, at * DATA_KEY_BYTES);
  return {
    id,
    keys,
    keyOf,
    sealed: values.map((v) => (typeof v.sealed === 'string' ? v.sealed : v.sealed.toString('hex'))),
    ids: values.map((v) => v.dataPointId),
    attributes: values.map((v) => v.attribute),
  };
}

function openInline(values: readonly SealedValue[]): unknown[] {
  return values.map((v, i) => {
    try {
      return openValue(v.dataKey, typeof v.sealed === 'string' ? Buffer.from(v.sealed, 'hex') : v.sealed, v.dataPointId, v.attribute);
    } catch (err) {
      if (err instanceof EnvelopeError) throw new OpenError(i);
      throw err;
    }
  });
}
