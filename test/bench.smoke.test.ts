/**
 * Keeps the benchmark harness from rotting: `npm run bench -- --quick` must run every
 * scenario to the end and report a number for each. The targets are not checked here (the
 * quick mode's sizes and durations are too small to mean anything); BENCHMARKS.md is where
 * they are judged.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../core/src/testing/process.js';
import { ALL_SCENARIOS } from '../bench/scenarios/index.js';
import type { RunReport } from '../bench/report.js';

/** The type of the file system `path` is on, from the longest mount point that holds it. */
function fileSystemOf(path: string): string | undefined {
  const mounts = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .filter(([, point]) => point !== undefined && (path === point || path.startsWith(point.endsWith('/') ? point : `${point}/`)));
  return mounts.sort((a, b) => b[1].length - a[1].length)[0]?.[2];
}

test('the quick benchmark runs every scenario and reports numbers', async (t) => {
  t.timeout(600_000);
  const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'quick.json');
  const build = join(REPO_ROOT, `bench/.build-${process.pid}`);
  t.teardown(() => rmSync(build, { recursive: true, force: true }));
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench/run.ts'), '--quick', '--out', out], {
    cwd: REPO_ROOT,
    // Its own build (inside the repository, where node_modules resolves): another suite runs
    // `npm start`, which rebuilds dist/.
    env: { ...process.env, BENCH_BUILD_DIR: build },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const code = await new Promise<number | null>((res) => child.once('exit', (c) => res(c)));
  t.is(code, 0, output);

  const report = JSON.parse(readFileSync(out, 'utf8')) as RunReport;
  t.is(report.mode, 'quick');
  t.true(report.machine.cores > 0);
  t.truthy(report.machine.cpu);
  for (const scenario of ALL_SCENARIOS) {
    const figures = report.figures.filter((f) => f.scenario === scenario);
    t.true(figures.length > 0, `no figure for ${scenario}`);
    for (const f of figures) {
      t.is(f.problems, undefined, `${scenario} / ${f.name}: ${f.problems?.join('; ')}`);
      t.true(typeof f.value === 'number' && Number.isFinite(f.value), `${scenario} / ${f.name} has no number`);
      // An added latency is a difference of two measured latencies: on a busy machine the direct
      // path's p99 can come out the higher one, which is noise, not a missing figure.
      if (!f.name.startsWith('added latency')) t.true((f.value ?? 0) > 0, `${scenario} / ${f.name} is not positive`);
    }
    t.true(output.includes(scenario), `${scenario} missing from the printed table`);
  }
  // What tells whether the event loop was the limit, read from /proc on Linux (CI's machine).
  if (process.platform === 'linux') {
    const read = report.figures.find((f) => f.scenario === 'read-by-id');
    const busy = read?.notes?.map((n) => /^vault main thread busy (\d+)% of the run/.exec(n)).find((m) => m !== null);
    t.truthy(busy, `no main-thread figure among ${JSON.stringify(read?.notes)}`);
    t.true(Number(busy![1]) > 0 && Number(busy![1]) <= 110, `main thread busy ${busy![1]}%`);
    // A store on SQLite commits pages to the write-ahead log, which the kernel counts as
    // written to storage (a file system in memory has no storage to count them against).
    if (fileSystemOf(tmpdir()) !== 'tmpfs') {
      const store = report.figures.find((f) => f.scenario === 'store');
      const written = store?.notes?.map((n) => /^vault storage writes per request: ([\d.]+) KiB/.exec(n)).find((m) => m !== null);
      t.truthy(written, `no storage figure among ${JSON.stringify(store?.notes)}`);
      t.true(Number(written![1]) > 0, `a store wrote ${written![1]} KiB`);
    }
  }
});
