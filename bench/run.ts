/**
 * `npm run bench [-- --quick] [-- --only <scenario>[,<scenario>...]] [-- --rounds <n>] [-- --out <file>] [-- --cpu-prof <dir>]`
 *
 * With --cpu-prof, each vault is CPU-profiled during each measured run, one file per figure
 * in <dir>; `node --import tsx bench/profile-summary.ts <file.cpuprofile>` lists the hot spots.
 *
 * Runs every scenario group in turn (each on fresh processes and data), prints the table of
 * figures with their baselines, ratios and targets, and writes the same as JSON (default
 * bench/results/latest.json). Exits 1 if any figure had errors or non-2xx answers, 2 on bad
 * arguments.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { LoadGenerator } from './load.js';
import { closeApiAgent } from './api.js';
import { BUILD_DIR, killAll, profileVaultsInto } from './processes.js';
import { describeMachine, formatTable, writeReport, type Figure, type RunReport } from './report.js';
import { ROUND_WARMUP_SEC, type BenchContext, type Settings } from './context.js';
import { ALL_SCENARIOS, GROUPS } from './scenarios/index.js';

interface Args {
  quick: boolean;
  rounds?: number;
  only?: string[];
  out: string;
  cpuProf?: string;
}

function usage(problem: string): never {
  process.stderr.write(`${problem}\nusage: npm run bench -- [--quick] [--only <scenario>[,<scenario>...]] [--rounds <n>] [--out <file>] [--cpu-prof <dir>]\nscenarios: ${ALL_SCENARIOS.join(', ')}\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, out: resolve(import.meta.dirname, 'results/latest.json') };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') args.quick = true;
    else if (arg === '--rounds') {
      const rounds = Number(argv[++i]);
      if (!Number.isInteger(rounds) || rounds < 1) usage('--rounds needs a whole number of at least 1');
      args.rounds = rounds;
    } else if (arg === '--only' || arg === '--out' || arg === '--cpu-prof') {
      const value = argv[++i];
      if (!value) usage(`${arg} needs a value`);
      if (arg === '--out') args.out = resolve(value);
      else if (arg === '--cpu-prof') args.cpuProf = resolve(value);
      else args.only = [...(args.only ?? []), ...value.split(',').map((s) => s.trim()).filter(Boolean)];
    } else if (arg === '--help' || arg === '-h') usage('');
    else usage(`unknown argument ${arg}`);
  }
  for (const s of args.only ?? []) if (!ALL_SCENARIOS.includes(s)) usage(`unknown scenario ${s}`);
  return args;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.cpuProf) profileVaultsInto(args.cpuProf);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      // Vaults, baselines, sidecars and the load generator would outlive an interrupted run.
      killAll();
      process.exit(130);
    });
  }
  const settings: Settings = args.quick
    ? { connections: 64, durationSec: 1, warmupSec: 0.5, rounds: 1 }
    : { connections: 64, durationSec: 10, warmupSec: 3, rounds: args.rounds ?? 5 };
  const started = Date.now();
  const figures: Figure[] = [];
  const load = new LoadGenerator();
  const ctx: BenchContext = {
    quick: args.quick,
    settings,
    load,
    figures,
    wants: (s) => !args.only || args.only.includes(s),
    log: (m) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${m}\n`),
  };
  // The vault and sidecar run as in production: the compiled build, brought up to date here.
  ctx.log('building dist/ (npm run build)');
  execFileSync(process.execPath, [resolve(import.meta.dirname, '../node_modules/typescript/bin/tsc'), '-p', resolve(import.meta.dirname, '../tsconfig.build.json'), '--outDir', BUILD_DIR, '--tsBuildInfoFile', resolve(BUILD_DIR, '.tsbuildinfo')], {
    stdio: 'inherit',
  });
  const machine = describeMachine();
  ctx.log(`${args.quick ? 'quick' : 'full'} run on ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb} GB, node ${machine.node}`);
  let failure: Error | undefined;
  try {
    for (const group of GROUPS) await group.run(ctx);
  } catch (err) {
    failure = err as Error;
  } finally {
    await load.close();
    await closeApiAgent();
  }
  const report: RunReport = {
    startedAt: new Date(started).toISOString(),
    finishedAt: new Date().toISOString(),
    mode: args.quick ? 'quick' : 'full',
    only: args.only,
    settings,
    machine,
    loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
    figures,
  };
  writeReport(args.out, report);
  process.stdout.write(`\nMachine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb} GB RAM, node ${machine.node}, ${machine.os}\n`);
  process.stdout.write(`Load average: ${machine.loadAverage.join(' ')} at the start, ${report.loadAverageAtEnd.join(' ')} at the end\n`);
  const alternating = settings.rounds > 1 ? ` (beside a baseline: ${settings.rounds} alternating rounds of ${settings.durationSec / settings.rounds} s each, ${ROUND_WARMUP_SEC} s warm-up after the first)` : '';
  process.stdout.write(`Load: ${settings.connections} keep-alive connections, ${settings.warmupSec} s warm-up, ${settings.durationSec} s measured per figure${alternating}\n\n`);
  process.stdout.write(`${formatTable(figures)}\n\nJSON: ${args.out}\n`);
  if (failure) {
    process.stderr.write(`\nThe run stopped early: ${failure.stack ?? failure.message}\n`);
    process.exit(1);
  }
  if (figures.some((f) => f.problems?.length)) process.exit(1);
}

await main();
