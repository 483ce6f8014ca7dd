/**
 * What every scenario group gets: the run's settings, the load generator, and helpers that
 * turn load runs into figures (with their baseline, ratio, target and loud problems).
 */
import type { LoadGenerator, LoadJob, Measurement, RequestSpec } from './load.js';
import { loadProblem, type Figure, type Target, type Unit } from './report.js';
import { isProfiling, whileProfiling } from './processes.js';
import { mergeMeasurements } from './measurement.js';
import { observe } from './observe.js';

export interface Settings {
  connections: number;
  durationSec: number;
  warmupSec: number;
  /**
   * A figure with a baseline is measured in this many alternating rounds of each side, and the
   * rounds of a side are added up: on a shared machine whose speed drifts over minutes, the
   * two sides then run under the same conditions, not one after the other.
   */
  rounds: number;
}

export interface BenchContext {
  quick: boolean;
  settings: Settings;
  load: LoadGenerator;
  figures: Figure[];
  /** Whether `--only` (if given) selected this scenario id. */
  wants(scenario: string): boolean;
  log(message: string): void;
}

export interface Side {
  name: string;
  url: string | string[];
  pool: RequestSpec[];
}

export interface CompareOptions {
  scenario: string;
  name: string;
  vault: Side;
  baseline?: Side;
  /** Events per request: figures become events/s. */
  perRequest?: number;
  connections?: number;
  durationSec?: number;
  target?: (figure: Figure) => Target;
  notes?: string[];
  /** Add the run's CPU use and the vaults' activity-lock and seal-lag figures to the notes. */
  observe?: boolean;
}

/** Warm-up of every round after the first: new connections, on a process already warm. */
export const ROUND_WARMUP_SEC = 1;

export function job(ctx: BenchContext, side: Side, overrides: Partial<LoadJob> = {}): LoadJob {
  return {
    targets: Array.isArray(side.url) ? side.url : [side.url],
    connections: ctx.settings.connections,
    durationSec: ctx.settings.durationSec,
    warmupSec: ctx.settings.warmupSec,
    pool: side.pool,
    ...overrides,
  };
}

/** One answer to the first request of the pool, to show what a failing scenario is told. */
async function probe(side: Side): Promise<string> {
  const spec = side.pool[0];
  const base = Array.isArray(side.url) ? side.url[0] : side.url;
  try {
    const res = await fetch(`${base}${spec.path}`, { method: spec.method, headers: spec.headers, body: spec.body });
    return `sample answer to ${spec.method} ${spec.path}: ${res.status} ${(await res.text()).slice(0, 300)}`;
  } catch (err) {
    return `sample request ${spec.method} ${spec.path} failed: ${(err as Error).message}`;
  }
}

export async function problemsOf(label: string, side: Side, m: Measurement): Promise<string[]> {
  const problem = loadProblem(label, m);
  return problem ? [problem, await probe(side)] : [];
}

/** Runs the baseline (if any) then the vault side under the same load, and records one figure. */
export async function compare(ctx: BenchContext, options: CompareOptions): Promise<Figure> {
  const overrides: Partial<LoadJob> = {};
  if (options.connections) overrides.connections = options.connections;
  if (options.durationSec) overrides.durationSec = options.durationSec;
  const per = options.perRequest ?? 1;
  const unit: Unit = options.perRequest ? 'events/s' : 'req/s';
  const problems: string[] = [];
  let baseline: Figure['baseline'];
  let baselineLoad: Measurement | undefined;
  const vaultJob = job(ctx, options.vault, overrides);
  // A profile covers one run of the vault: profiled figures are measured in one round.
  const rounds = options.baseline && !isProfiling() ? ctx.settings.rounds : 1;
  let load: Measurement;
  let observed: string[] = [];
  if (options.baseline && rounds > 1) {
    ctx.log(`  ${options.scenario}: ${options.name} — ${options.baseline.name} and ${options.vault.name} in ${rounds} alternating rounds`);
    const baselineJob = job(ctx, options.baseline, overrides);
    const baselineRuns: Measurement[] = [];
    const vaultRuns: Measurement[] = [];
    const watching = options.observe ? await observe(vaultJob.targets, { paused: true }) : undefined;
    for (let round = 0; round < rounds; round++) {
      // The first round of each side warms it up in full; later ones settle the connections.
      const shape = { durationSec: baselineJob.durationSec / rounds, warmupSec: round === 0 ? baselineJob.warmupSec : ROUND_WARMUP_SEC, latencies: true };
      baselineRuns.push(await ctx.load.run({ ...baselineJob, ...shape }));
      await watching?.resume();
      vaultRuns.push(await ctx.load.run({ ...vaultJob, ...shape }));
      await watching?.pause();
    }
    baselineLoad = mergeMeasurements(baselineRuns);
    load = mergeMeasurements(vaultRuns);
    observed = (await watching?.stop()) ?? [];
  } else {
    if (options.baseline) {
      ctx.log(`  ${options.scenario}: ${options.name} — ${options.baseline.name}`);
      baselineLoad = await ctx.load.run(job(ctx, options.baseline, overrides));
    }
    ctx.log(`  ${options.scenario}: ${options.name} — ${options.vault.name}`);
    const watching = options.observe ? await observe(vaultJob.targets) : undefined;
    load = await whileProfiling(vaultJob.targets, `${options.scenario} ${options.name}`, () => ctx.load.run(vaultJob));
    observed = (await watching?.stop()) ?? [];
  }
  if (options.baseline && baselineLoad) {
    problems.push(...(await problemsOf(options.baseline.name, options.baseline, baselineLoad)));
    baseline = { name: options.baseline.name, value: baselineLoad.rps * per, p50: baselineLoad.p50, p99: baselineLoad.p99 };
  }
  problems.push(...(await problemsOf(options.vault.name, options.vault, load)));
  const figure: Figure = {
    scenario: options.scenario,
    name: options.name,
    unit,
    value: load.rps * per,
    p50: load.p50,
    p99: load.p99,
    baseline,
    ratio: baseline && baseline.value > 0 ? (load.rps * per) / baseline.value : undefined,
    problems: problems.length ? problems : undefined,
    notes: options.notes || observed.length ? [...(options.notes ?? []), ...observed] : undefined,
    load,
    baselineLoad,
  };
  if (options.target) figure.target = options.target(figure);
  ctx.figures.push(figure);
  return figure;
}

export function ratioTarget(min: number, of = 'baseline'): (f: Figure) => Target {
  return (f) => ({ text: `>= ${min}x ${of}`, pass: f.ratio !== undefined && f.ratio >= min && !f.problems?.length });
}

/**
 * Relates a figure to a reference figure of the same run (the same scenario on SQLite, with
 * one process, without rules), both measured beside the same kind of baseline server. The
 * machine's speed drifts between the two measurements, so the reference is scaled by how far
 * the baseline moved between them; the unscaled ratio goes into the notes.
 */
export function relate(figure: Figure, reference: Figure | undefined, name: string): void {
  const notes = figure.notes ?? [];
  figure.notes = notes;
  if (!reference?.value) {
    notes.push(`no ${name} figure in this run to compare with`);
    return;
  }
  const unscaled = (figure.value ?? 0) / reference.value;
  const now = figure.baselineLoad?.rps;
  const then = reference.baselineLoad?.rps;
  if (!now || !then) {
    figure.baseline = { name, value: reference.value, p50: reference.p50, p99: reference.p99 };
    figure.ratio = unscaled;
    return;
  }
  const drift = now / then;
  figure.baseline = { name: `${name}, drift-corrected`, value: reference.value * drift, p50: reference.p50, p99: reference.p99 };
  figure.ratio = unscaled / drift;
  notes.push(
    `${name}: ${Math.round(reference.value).toLocaleString('en-US')} ${reference.unit} when the baseline answered ${Math.round(then).toLocaleString('en-US')} req/s; ` +
      `beside this figure it answered ${Math.round(now).toLocaleString('en-US')} req/s, so the reference is scaled by ${drift.toFixed(2)} (unscaled ratio ${unscaled.toFixed(2)}x)`,
  );
}
