/**
 * What a run produces: one figure per measured quantity, each beside its baseline (same run)
 * as a ratio and, where issue 9 sets one, a target with pass/fail. Printed as a table and
 * written as JSON with a description of the machine.
 */
import { cpus, totalmem, loadavg, platform, release } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Measurement } from './load.js';

export type Unit = 'req/s' | 'events/s' | 'points/s' | 'ms' | 'MB' | 'x';

export interface Target {
  text: string;
  pass: boolean;
}

export interface Figure {
  /** The scenario id `--only` selects. */
  scenario: string;
  name: string;
  unit: Unit;
  value: number | null;
  p50?: number;
  p99?: number;
  baseline?: { name: string; value: number; p50?: number; p99?: number };
  /** value / baseline.value. */
  ratio?: number;
  target?: Target;
  /** Errors, non-2xx answers, incomplete delivery: the figure cannot be trusted. */
  problems?: string[];
  notes?: string[];
  load?: Measurement;
  baselineLoad?: Measurement;
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGb: number;
  node: string;
  os: string;
  loadAverage: number[];
}

export function describeMachine(): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    os: `${platform()} ${release()}`,
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

function num(value: number | null | undefined, unit?: Unit): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '-';
  if (unit === 'x') return `${value.toFixed(2)}x`;
  if (unit === 'ms' || unit === 'MB') return value < 10 ? value.toFixed(2) : value.toFixed(1);
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

export function formatTable(figures: Figure[]): string {
  const header = ['scenario', 'figure', 'value', 'unit', 'p50 ms', 'p99 ms', 'baseline', 'ratio', 'target', 'result'];
  const rows = figures.map((f) => {
    const result = f.problems?.length ? 'ERRORS' : f.target ? (f.target.pass ? 'pass' : 'FAIL') : '';
    return [
      f.scenario,
      f.name,
      num(f.value, f.unit),
      f.unit,
      num(f.p50, 'ms'),
      num(f.p99, 'ms'),
      f.baseline ? `${num(f.baseline.value, f.unit)} (${f.baseline.name})` : '',
      f.ratio === undefined ? '' : num(f.ratio, 'x'),
      f.target?.text ?? '',
      result,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const numeric = new Set([2, 4, 5, 7]);
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i], numeric.has(i))).join('  ').trimEnd();
  const out = [line(header), widths.map((w) => '-'.repeat(w)).join('  ')];
  for (const r of rows) out.push(line(r));
  const troubled = figures.filter((f) => f.problems?.length);
  if (troubled.length) {
    out.push('', '!!! THESE FIGURES HAD ERRORS AND CANNOT BE TRUSTED !!!');
    for (const f of troubled) for (const p of f.problems!) out.push(`!!! ${f.scenario} / ${f.name}: ${p}`);
  }
  const notes = figures.filter((f) => f.notes?.length);
  if (notes.length) {
    out.push('', 'Notes:');
    for (const f of notes) for (const n of f.notes!) out.push(`  ${f.scenario} / ${f.name}: ${n}`);
  }
  return out.join('\n');
}

export interface RunReport {
  startedAt: string;
  finishedAt: string;
  mode: 'full' | 'quick';
  only?: string[];
  settings: { connections: number; durationSec: number; warmupSec: number; rounds?: number };
  machine: Machine;
  /** 1, 5 and 15 minute load averages when the run ended: was the machine quiet throughout? */
  loadAverageAtEnd: number[];
  figures: Figure[];
}

export function writeReport(path: string, report: RunReport): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}

/** Non-2xx answers and socket errors of one load run, as one loud line; undefined when clean. */
export function loadProblem(what: string, m: Measurement): string | undefined {
  if (m.non2xx === 0 && m.errors === 0 && m.ok > 0) return undefined;
  const codes = Object.entries(m.statusCodes)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, n]) => `${n}x ${code}`)
    .join(', ');
  if (m.ok === 0 && m.non2xx === 0 && m.errors === 0) return `${what}: no response at all`;
  return `${what}: ${m.non2xx} non-2xx${codes ? ` (${codes})` : ''}, ${m.errors} socket errors/timeouts, ${m.ok} ok`;
}
