/**
 * The load generator, as seen from the harness. autocannon runs in a forked child process
 * (`load-worker.ts`) so that generating load never shares an event loop with the harness or
 * with a server under test; jobs and results travel over the IPC channel.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { track } from './processes.js';

export interface RequestSpec {
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** Sent as is; JSON bodies are serialised once by the scenario, not per request. */
  body?: string;
}

export interface LoadJob {
  /** Base URLs; with several, the connections are split evenly across them (several vault processes). */
  targets: string[];
  connections: number;
  /** Measured run, after the warm-up. */
  durationSec: number;
  /** Same load, results discarded: JIT, caches, connection set-up and SQLite pages settle first. */
  warmupSec: number;
  /** Requests are taken round-robin from this pool by all connections together. */
  pool: RequestSpec[];
  /** Default 120: at 64 connections a 1000-event bulk can take seconds per answer on a slow vault. */
  timeoutSec?: number;
  /** Send back every 2xx latency, so that runs can be merged (`mergeMeasurements`). */
  latencies?: boolean;
}

export interface Measurement {
  /** Successful (2xx) responses in the measured run. */
  ok: number;
  durationSec: number;
  /** 2xx responses per second. */
  rps: number;
  /** Latency of 2xx responses, milliseconds (sub-millisecond resolution). */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  non2xx: number;
  /** Socket errors, resets and timeouts. */
  errors: number;
  statusCodes: Record<string, number>;
  connections: number;
  /** Every 2xx latency (ms), when the job asked for them. */
  latencies?: number[];
}

interface WorkerReply {
  id: number;
  result?: Measurement;
  error?: string;
}

export class LoadGenerator {
  private child: ChildProcess | undefined;
  private nextId = 1;
  private pending = new Map<number, { resolve: (m: Measurement) => void; reject: (e: Error) => void }>();

  private start(): ChildProcess {
    if (this.child) return this.child;
    const child = fork(fileURLToPath(new URL('./load-worker.ts', import.meta.url)), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    track(child);
    child.on('message', (msg: WorkerReply) => {
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      if (msg.result) waiter.resolve(msg.result);
      else waiter.reject(new Error(`load generator: ${msg.error}`));
    });
    child.on('exit', (code) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`load generator exited with ${code}`));
      this.pending.clear();
      this.child = undefined;
    });
    this.child = child;
    return child;
  }

  run(job: LoadJob): Promise<Measurement> {
    if (job.pool.length === 0) throw new Error('load job without requests');
    const child = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      child.send({ id, job });
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.disconnect();
    await exited;
  }
}

/** Pool of JSON requests sharing method and headers. */
export function jsonRequests(method: string, headers: Record<string, string>, items: { path: string; body?: unknown }[]): RequestSpec[] {
  return items.map(({ path, body }) => ({
    method,
    path,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
}
