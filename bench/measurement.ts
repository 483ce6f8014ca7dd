/** Turning answered requests into a measurement, and merging runs into one. */
import type { Measurement } from './load.js';

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** The summary figures of a run from its counts and every 2xx latency. */
export function summarize(base: Omit<Measurement, 'p50' | 'p90' | 'p99' | 'max' | 'mean' | 'rps'>, latencies: number[]): Measurement {
  const sorted = Float64Array.from(latencies).sort();
  const sum = latencies.reduce((a, b) => a + b, 0);
  return {
    ...base,
    rps: base.ok / base.durationSec,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
}

/** Runs of one side (jobs run with `latencies`) as if they were one run. */
export function mergeMeasurements(runs: Measurement[]): Measurement {
  const statusCodes: Record<string, number> = {};
  for (const run of runs) for (const [code, n] of Object.entries(run.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  const total = (pick: (m: Measurement) => number) => runs.reduce((a, m) => a + pick(m), 0);
  return summarize(
    { ok: total((m) => m.ok), durationSec: total((m) => m.durationSec), non2xx: total((m) => m.non2xx), errors: total((m) => m.errors), statusCodes, connections: runs[0].connections },
    runs.flatMap((m) => m.latencies ?? []),
  );
}
