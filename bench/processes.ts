/**
 * The processes a benchmark run starts: vaults (through core's spawnVault), the baseline
 * server, and sidecars. Every one is a real OS process, so memory figures are per process
 * and load never shares an event loop with the harness.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort, REPO_ROOT, spawnVault, waitForHttp, type VaultProcess } from '../core/src/testing/process.js';

const children = new Set<ChildProcess>();

/** Remembers a child process until it exits, so an interrupted run can stop it. */
/**
 * Where the run's compiled vault and sidecar live: dist/, as `npm start` runs them, unless
 * BENCH_BUILD_DIR says otherwise (the smoke test builds its own, beside a concurrent `npm start`).
 */
export const BUILD_DIR = resolve(REPO_ROOT, process.env.BENCH_BUILD_DIR ?? 'dist');

export function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Kills every process this run started and has not stopped yet (for SIGINT/SIGTERM). */
export function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
}

/** Peak resident set size of a live process so far (Linux VmHWM), in MB; undefined elsewhere. */
export function peakRssMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `bench-${prefix}-`));
}

/**
 * A vault for benchmarking: its own data directory, warn-level logs, and a rate limit so high
 * it never refuses (the limiter still runs on every request, as it does in production).
 */
export async function startVault(env: Record<string, string> = {}): Promise<VaultProcess> {
  const vault = await spawnVault({
    compiled: BUILD_DIR,
    env: {
      VAULT_RATE_LIMIT_MAX: '100000000',
      VAULT_INDEX_KEY: env.VAULT_INDEX_KEY ?? randomBytes(32).toString('base64'),
      ...(profileDir
        ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${join(REPO_ROOT, 'bench/cpu-profiler.mjs')}`.trim(), BENCH_CPU_PROF_DIR: profileDir }
        : {}),
      ...env,
    },
  });
  if (profileDir && vault.child.pid !== undefined) profiled.set(vault.url, { pid: vault.child.pid, taken: 0 });
  if (vault.child.pid !== undefined) vaultPids.set(vault.url, vault.child.pid);
  track(vault.child);
  return vault;
}

/** Every vault started, by URL: `observe` watches its process's main thread. */
const vaultPids = new Map<string, number>();

export function vaultPid(url: string): number | undefined {
  return vaultPids.get(url);
}

let profileDir: string | undefined;
const profiled = new Map<string, { pid: number; taken: number }>();

export function isProfiling(): boolean {
  return profileDir !== undefined;
}

/** From now on, vault processes can be profiled (see `whileProfiling`) into `dir`. */
export function profileVaultsInto(dir: string): void {
  mkdirSync(dir, { recursive: true });
  profileDir = dir;
}

/**
 * Runs `work` with a CPU profile running in each vault behind `urls` (when --cpu-prof is
 * on), and stores each profile as <dir>/<name>-<pid>.cpuprofile.
 */
export async function whileProfiling<T>(urls: string[], name: string, work: () => Promise<T>): Promise<T> {
  const targets = urls.map((u) => profiled.get(u)).filter((t) => t !== undefined);
  if (!profileDir || targets.length === 0) return work();
  for (const t of targets) process.kill(t.pid, 'SIGUSR2');
  try {
    return await work();
  } finally {
    for (const t of targets) {
      process.kill(t.pid, 'SIGUSR2');
      const written = join(profileDir, `vault-${t.pid}-${++t.taken}.cpuprofile`);
      const until = Date.now() + 30_000;
      while (!existsSync(written) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      const slug = name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '').toLowerCase();
      if (existsSync(written)) renameSync(written, join(profileDir, `${slug}-${t.pid}.cpuprofile`));
    }
  }
}

export interface ManagedProcess {
  url: string;
  port: number;
  child: ChildProcess;
  output(): string;
  peakRssMb(): number | undefined;
  stop(): Promise<void>;
}

async function startNodeProcess(script: string, env: Record<string, string>, port: number, readyPath: string, name: string): Promise<ManagedProcess> {
  let out = '';
  const args = script.endsWith('.js') ? [join(BUILD_DIR, script)] : ['--import', 'tsx', join(REPO_ROOT, script)];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  track(child);
  const exited = new Promise<void>((res) => child.once('exit', () => res()));
  const url = `http://127.0.0.1:${port}`;
  await Promise.race([
    waitForHttp(`${url}${readyPath}`, 30_000),
    exited.then(() => {
      throw new Error(`${name} exited before answering:\n${out}`);
    }),
  ]);
  return {
    url,
    port,
    child,
    output: () => out,
    peakRssMb: () => peakRssMb(child.pid),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface BaselineProcess extends ManagedProcess {
  dbPath: string;
  dispose(): Promise<void>;
}

/** The baseline server (bench/baseline.ts) on a fresh database, or on `dbPath` if seeded already. */
export async function startBaseline(dbPath?: string): Promise<BaselineProcess> {
  const dir = dbPath ? undefined : tempDir('baseline');
  const path = dbPath ?? join(dir!, 'baseline.db');
  const port = await freePort();
  const proc = await startNodeProcess('bench/baseline.ts', { BASELINE_PORT: String(port), BASELINE_DB: path }, port, '/data/ready', 'baseline');
  return {
    ...proc,
    dbPath: path,
    async dispose() {
      await proc.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SidecarProcess extends ManagedProcess {
  proxyUrl?: string;
}

/** `npm run sidecar`'s entry point with the given settings (see proxy/src/config.ts). */
export async function startSidecar(env: Record<string, string>): Promise<SidecarProcess> {
  const port = await freePort();
  const proxyPort = env.SIDECAR_UPSTREAM ? await freePort() : undefined;
  const proc = await startNodeProcess(
    'proxy/src/main.js',
    { SIDECAR_LOG_LEVEL: 'warn', SIDECAR_PORT: String(port), ...(proxyPort ? { SIDECAR_PROXY_PORT: String(proxyPort) } : {}), ...env },
    port,
    '/healthz',
    'sidecar',
  );
  return { ...proc, proxyUrl: proxyPort ? `http://127.0.0.1:${proxyPort}` : undefined };
}

/** A vault and a baseline, started side by side; if either fails, the other is stopped. */
export async function startVaultAndBaseline(): Promise<{ vault: VaultProcess; baseline: BaselineProcess }> {
  const [vault, baseline] = await Promise.allSettled([startVault(), startBaseline()]);
  if (vault.status === 'fulfilled' && baseline.status === 'fulfilled') return { vault: vault.value, baseline: baseline.value };
  if (vault.status === 'fulfilled') await vault.value.dispose();
  if (baseline.status === 'fulfilled') await baseline.value.dispose();
  throw vault.status === 'rejected' ? vault.reason : (baseline as PromiseRejectedResult).reason;
}
