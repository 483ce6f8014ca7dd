/**
 * What a load run did to the machine and to the activity log: CPU busy time across all cores
 * (from /proc/stat), and the vaults' own activity-lock and seal-lag histograms (from
 * /metrics), as differences between the start and the end of the measured run.
 */
import { readFileSync } from 'node:fs';

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

/** Histogram sums and counts by series, e.g. `vault_activity_lock_wait_seconds{stage="append"}`. */
type Series = Map<string, { sum: number; count: number; buckets: Map<string, number> }>;

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
      const entry = series.get(key) ?? { sum: 0, count: 0, buckets: new Map() };
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
  stop(): Promise<string[]>;
}

/** Starts watching; `stop()` returns notes for the figure. */
export async function observe(urls: string[]): Promise<Observation> {
  const cpuBefore = cpuSample();
  const { series: before, work: workBefore } = await metricsSample(urls);
  return {
    async stop() {
      const cpuAfter = cpuSample();
      const { series: after, work: workAfter } = await metricsSample(urls);
      const notes: string[] = [];
      if (cpuBefore && cpuAfter && cpuAfter.total > cpuBefore.total) {
        notes.push(`CPU busy ${Math.round((100 * (cpuAfter.busy - cpuBefore.busy)) / (cpuAfter.total - cpuBefore.total))}% of all cores during the run (vaults, database and load generator together)`);
      }
      // Less noisy than throughput on a shared machine: what each answer cost the vault itself.
      const requests = workAfter.requests - workBefore.requests;
      if (requests > 0 && workAfter.cpuSeconds > workBefore.cpuSeconds) {
        notes.push(`vault CPU per request: ${(((workAfter.cpuSeconds - workBefore.cpuSeconds) / requests) * 1e6).toFixed(0)} µs (${requests} requests)`);
      }
      for (const [key, a] of after) {
        const b = before.get(key) ?? { sum: 0, count: 0, buckets: new Map() };
        const count = a.count - b.count;
        if (count <= 0) continue;
        const mean = ((a.sum - b.sum) / count) * 1000;
        if (key.startsWith('vault_activity_seal_lag_seconds')) {
          const withinSecond = (a.buckets.get('1') ?? 0) - (b.buckets.get('1') ?? 0);
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
