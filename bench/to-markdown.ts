/**
 * A run's JSON as the markdown table BENCHMARKS.md carries:
 *   node --import tsx bench/to-markdown.ts [bench/results/latest.json]
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Figure, RunReport } from './report.js';

function n(value: number | null | undefined, unit?: string): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '';
  if (unit === 'x') return `${value.toFixed(2)}x`;
  if (unit === 'ms' || unit === 'MB') return value < 10 ? value.toFixed(2) : value.toFixed(1);
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

export function toMarkdown(report: RunReport): string {
  const m = report.machine;
  const lines = [
    `Run of ${report.startedAt.slice(0, 16).replace('T', ' ')} UTC (${report.mode}): ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB RAM, ${m.os}, node ${m.node}; ` +
      `load average ${m.loadAverage[0]} at the start, ${report.loadAverageAtEnd?.[0] ?? '?'} at the end; ` +
      `${report.settings.connections} connections, ${report.settings.warmupSec} s warm-up, ${report.settings.durationSec} s measured` +
      ((report.settings.rounds ?? 1) > 1 ? ` (beside a baseline: in ${report.settings.rounds} rounds alternating with it).` : '.'),
    '',
    '| scenario | figure | value | p50 ms | p99 ms | baseline | ratio | target | result |',
    '|---|---|--:|--:|--:|---|--:|---|---|',
  ];
  const row = (f: Figure) => {
    const result = f.problems?.length ? '**errors**' : f.target ? (f.target.pass ? 'pass' : '**FAIL**') : '';
    const baseline = f.baseline ? `${n(f.baseline.value, f.unit)} ${f.unit === 'x' ? '' : f.unit} (${f.baseline.name})` : '';
    return `| ${f.scenario} | ${f.name} | ${n(f.value, f.unit)} ${f.unit === 'x' ? '' : f.unit} | ${n(f.p50, 'ms')} | ${n(f.p99, 'ms')} | ${baseline} | ${f.ratio === undefined ? '' : n(f.ratio, 'x')} | ${f.target?.text ?? ''} | ${result} |`;
  };
  for (const f of report.figures) lines.push(row(f));
  return lines.join('\n').replace(/ {2,}/g, ' ');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = resolve(process.argv[2] ?? resolve(import.meta.dirname, 'results/latest.json'));
  process.stdout.write(`${toMarkdown(JSON.parse(readFileSync(file, 'utf8')) as RunReport)}\n`);
}
