/**
 * What a load run did to the machine and to the activity log: CPU busy time across all cores
 * (from /proc/stat), how busy each vault's main thread was (from /proc/<pid>/task/<pid>/stat),
 * what the vaults wrote to storage (from /proc/<pid>/io), and the vaults' own activity-lock
 * and seal-lag histograms (from /metrics), as differences between the start and the end of
 * the measured run.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { vaultPid } from './processes.js';

interface CpuSample {
  busy: number;
  total: number;
}

function cpuSample(): CpuSample | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = fields[3] + (fields[4] ?? 0);
    const total = fields.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

/**
 * CPU time of the vaults' main threads (the event loop: on Linux the thread whose id is the
 * process's), summed over processes, in clock ticks. A CPU profile cannot tell this: V8 counts
 * the poll phase's native work (reading sockets) as "(idle)".
 */
interface ThreadSample {
  user: number;
  system: number;
  processes: number;
  at: number;
  /**
   * Bytes the vaults' processes (every thread: the checkpointer copies the log's pages into
   * the database file) sent towards storage; sockets are not counted. Undefined where the
   * kernel does not tell.
   */
  storageBytes?: number;
}

function storageBytes(pid: number): number | undefined {
  try {
    const bytes = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return bytes ? Number(bytes[1]) : undefined;
  } catch {
    return undefined;
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function mainThreadSample(urls: string[]): ThreadSample {
  const sample: ThreadSample = { user: 0, system: 0, processes: 0, at: performance.now(), storageBytes: 0 };
  for (const url of urls) {
    const pid = vaultPid(url);
    if (pid === undefined) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
      // Fields after the command's closing parenthesis, from the third (state): utime is the 14th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      sample.user += Number(fields[11]);
      sample.system += Number(fields[12]);
      sample.processes += 1;
      const written = storageBytes(pid);
      // One process the kernel does not tell about leaves the sum unknown.
      if (sample.storageBytes !== undefined) sample.storageBytes = written === undefined ? undefined : sample.storageBytes + written;
    } catch {
      // Not Linux, or the process is gone: no figure.
    }
  }
  return sample;
}

/** Histogram sums and counts by series, e.g. `vault_activity_lock_wait_seconds{stage="append"}`. */
type Histogram = { sum: number; count: number; buckets: Map<string, number> };
type Series = Map<string, Histogram>;

const emptyHistogram = (): Histogram => ({ sum: 0, count: 0, buckets: new Map() });

/** The vaults' own CPU seconds and answered requests, summed over processes. */
interface Work {
  cpuSeconds: number;
  requests: number;
}

async function metricsSample(urls: string[]): Promise<{ series: Series; work: Work }> {
  const series: Series = new Map();
  const work: Work = { cpuSeconds: 0, requests: 0 };
  for (const url of urls) {
    let text: string;
    try {
      const res = await fetch(`${url}/metrics`);
      if (!res.ok) continue;
      text = await res.text();
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const cpu = /^vault_process_cpu_seconds_total ([0-9.e+-]+)$/.exec(line);
      if (cpu) work.cpuSeconds += Number(cpu[1]);
      // The scrapes themselves are answered on /metrics and are not counted as work.
      const answered = /^vault_http_requests_total\{(?![^}]*route="\/metrics")[^}]*\} ([0-9.e+-]+)$/.exec(line);
      if (answered) work.requests += Number(answered[1]);
      const m = /^(vault_activity_(?:lock_wait|seal_lag)_seconds)_(sum|count|bucket)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
      if (!m) continue;
      const labels = m[3] ?? '';
      const le = /le="([^"]+)"/.exec(labels)?.[1];
      const key = `${m[1]}${labels.replace(/,?le="[^"]+"/, '').replace('{}', '')}`;
      const entry = series.get(key) ?? emptyHistogram();
      const value = Number(m[4]);
      if (m[2] === 'sum') entry.sum += value;
      else if (m[2] === 'count') entry.count += value;
      else if (le) entry.buckets.set(le, (entry.buckets.get(le) ?? 0) + value);
      series.set(key, entry);
    }
  }
  return { series, work };
}

export interface Observation {
  /** Ends the interval being watched; `resume` starts another (the vault's rounds of an interleaved figure). */
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Ends watching; notes for the figure, over every interval watched. */
  stop(): Promise<string[]>;
}

interface Snapshot {
  cpu?: CpuSample;
  threads: ThreadSample;
  series: Series;
  work: Work;
}

async function snapshot(urls: string[]): Promise<Snapshot> {
  const cpu = cpuSample();
  const threads = mainThreadSample(urls);
  const { series, work } = await metricsSample(urls);
  return { cpu, threads, series, work };
}

/**
 * Starts watching (or, `paused`, waits for `resume`); the totals are the sums over the
 * intervals watched.
 */
export async function observe(urls: string[], { paused = false } = {}): Promise<Observation> {
  const cpu = { busy: 0, total: 0 };
  /** Main-thread ticks, and the ticks the watched time held for every process watched. */
  const threads = { user: 0, system: 0, available: 0 };
  /** Undefined once any interval could not be measured. */
  let storage: number | undefined = 0;
  const work: Work = { cpuSeconds: 0, requests: 0 };
  const series: Series = new Map();
  let from: Snapshot | undefined = paused ? undefined : await snapshot(urls);
  const pause = async () => {
    if (!from) return;
    const to = await snapshot(urls);
    if (from.cpu && to.cpu) {
      cpu.busy += to.cpu.busy - from.cpu.busy;
      cpu.total += to.cpu.total - from.cpu.total;
    }
    if (to.threads.processes > 0 && to.threads.processes === from.threads.processes) {
      threads.user += to.threads.user - from.threads.user;
      threads.system += to.threads.system - from.threads.system;
      threads.available += ((to.threads.at - from.threads.at) / 1000) * CLOCK_TICKS * to.threads.processes;
      const [start, end] = [from.threads.storageBytes, to.threads.storageBytes];
      storage = storage === undefined || start === undefined || end === undefined ? undefined : storage + end - start;
    } else {
      storage = undefined;
    }
    work.cpuSeconds += to.work.cpuSeconds - from.work.cpuSeconds;
    work.requests += to.work.requests - from.work.requests;
    for (const [key, a] of to.series) {
      const b = from.series.get(key) ?? emptyHistogram();
      const total = series.get(key) ?? emptyHistogram();
      total.sum += a.sum - b.sum;
      total.count += a.count - b.count;
      for (const [le, n] of a.buckets) total.buckets.set(le, (total.buckets.get(le) ?? 0) + n - (b.buckets.get(le) ?? 0));
      series.set(key, total);
    }
    from = undefined;
  };
  return {
    pause,
    async resume() {
      from ??= await snapshot(urls);
    },
    async stop() {
      await pause();
      const notes: string[] = [];
      if (cpu.total > 0) {
        notes.push(`CPU busy ${Math.round((100 * cpu.busy) / cpu.total)}% of all cores during the run (vaults, database and load generator together)`);
      }
      // Whether the event loop was the limit: near 100%, a faster answer needs less work on it.
      if (threads.available > 0) {
        const percent = (ticks: number) => Math.round((100 * ticks) / threads.available);
        notes.push(
          `vault main thread busy ${percent(threads.user + threads.system)}% of the run (user ${percent(threads.user)}%, system ${percent(threads.system)}%; per process, averaged)`,
        );
      }
      // Less noisy than throughput on a shared machine: what each answer cost the vault itself.
      if (work.requests > 0 && work.cpuSeconds > 0) {
        notes.push(`vault CPU per request: ${((work.cpuSeconds / work.requests) * 1e6).toFixed(0)} µs (${work.requests} requests)`);
      }
      // What a request costs a disk on SQLite: each page in the write-ahead log, then again in
      // the database file (BENCHMARKS.md item 24). A vault on PostgreSQL writes nothing itself.
      if (work.requests > 0 && storage !== undefined && storage > 0) {
        notes.push(`vault storage writes per request: ${(storage / work.requests / 1024).toFixed(1)} KiB (the write-ahead log and its checkpoints)`);
      }
      for (const [key, { sum, count, buckets }] of series) {
        if (count <= 0) continue;
        const mean = (sum / count) * 1000;
        if (key.startsWith('vault_activity_seal_lag_seconds')) {
          const withinSecond = buckets.get('1') ?? 0;
          notes.push(`seal lag: ${count} batches, mean ${mean.toFixed(1)} ms, ${((100 * withinSecond) / count).toFixed(1)}% within 1 s`);
        } else {
          const stage = /stage="([^"]+)"/.exec(key)?.[1] ?? key;
          notes.push(`activity lock wait (${stage}): ${count} waits, mean ${mean.toFixed(3)} ms`);
        }
      }
      return notes;
    },
  };
}
