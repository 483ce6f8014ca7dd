/**
 * The vault as its users run it: a separate `node core/src/main.ts` process on a free port.
 * For end-to-end, SDK, sidecar and multi-process tests.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createPostgresDatabase, testKeyPair } from './harness.js';
import type { KeyPairHeaders } from '../crypto/keys.js';

export const REPO_ROOT = resolve(fileURLToPath(import.meta.url), '../../../..');

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

export interface VaultProcess {
  url: string;
  port: number;
  adminKey: string;
  keys: KeyPairHeaders;
  dataDir: string;
  env: Record<string, string>;
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Sends a signal and waits for the exit; resolves to the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Starts the same vault (same data directory and database) again. */
  restart(): Promise<VaultProcess>;
  /** Stops it and removes its data directory and database (a restarted one: its predecessor's too). */
  dispose(): Promise<void>;
}

export interface SpawnVaultOptions {
  env?: Record<string, string>;
  dataDir?: string;
  port?: number;
  /** Run the compiled build in this directory (`npm run build` writes dist/) instead of the TypeScript sources. */
  compiled?: string;
  /**
   * What disposing must also clean up: a restarted vault takes over its predecessor's
   * database and data directory, so a test that only keeps the restarted one leaks neither.
   */
  inheritedCleanup?: () => Promise<void>;
}

export async function waitForHttp(url: string, deadlineMs = 120_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      return;
    } catch {
      if (Date.now() > until) throw new Error(`${url} did not answer within ${deadlineMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * The address a vault started with `VAULT_PORT=0` listens on, from its `vault started` line
 * (so at `VAULT_LOG_LEVEL` info or debug); rejects if the process exits first. A port picked
 * before the start could be taken by another test's server, which would answer in its place.
 */
export async function vaultListening(output: () => string, exited: Promise<unknown>, deadlineMs = 120_000): Promise<string> {
  let gone = false;
  void exited.then(() => (gone = true));
  const until = Date.now() + deadlineMs;
  for (;;) {
    // Whole lines only: the last may still be arriving.
    for (const line of output().split('\n').slice(0, -1)) {
      if (!line.includes('"vault started"')) continue;
      const url = (JSON.parse(line) as { url?: string }).url;
      if (url) return url;
    }
    if (gone) throw new Error(`the vault exited before it listened:\n${output()}`);
    if (Date.now() > until) throw new Error(`the vault did not log "vault started" within ${deadlineMs} ms (VAULT_LOG_LEVEL info or debug shows it):\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A port on 127.0.0.1 where nothing listens, for a database or vault that must be away. Not
 * one freePort() released: another test's server may be given it next, and would answer.
 * Ports below the ephemeral range are never given to a server that listens on port 0, so one
 * that refuses connections now (checked, in case this machine runs something there) stays so.
 * As the sidecar's test helper of that name (the packages do not import each other), without
 * the ports fetch() refuses as "bad port" (1, 9 among them) before it even connects.
 */
export async function closedPort(): Promise<number> {
  for (const port of [47, 91, 199, 223, 251]) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
    });
    if (refused) return port;
  }
  throw new Error('no closed port below the ephemeral range on 127.0.0.1');
}

/**
 * What `npm start` and the image give Node besides source maps. V8 lets the young generation
 * grow to 16 MiB per semi-space; at 8 the vault's peak memory while 1M points were stored
 * through its API was about 20 MB lower (278 MB against 292-305 MB), at no measured cost to
 * reads and stores and within the noise for bulk audits.
 */
export const VAULT_NODE_FLAGS = ['--max-semi-space-size=8'];

/** The port freePort() gave was taken by another process before the vault could listen on it. */
class PortTaken extends Error {}

export async function spawnVault(options: SpawnVaultOptions = {}): Promise<VaultProcess> {
  const fixed = options.port ?? (options.env?.VAULT_PORT ? Number(options.env.VAULT_PORT) : undefined);
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnVaultOn(fixed ?? (await freePort()), options);
    } catch (err) {
      // Test files run side by side, each starting servers on ports freePort() just released.
      if (!(err instanceof PortTaken) || fixed !== undefined || attempt >= 5) throw err;
    }
  }
}

/**
 * Whether the vault answering at `url` is the one started with `adminKey`: another test's
 * vault on a port taken from under this one answers health checks just as well, and every
 * request with this key 401. Polls while the answers are not yet conclusive (still starting).
 */
async function answersWithKey(url: string, adminKey: string): Promise<void> {
  for (;;) {
    const res = await fetch(`${url}/entitytypes`, { headers: { authorization: `Bearer ${adminKey}` } }).catch(() => undefined);
    await res?.arrayBuffer();
    if (res?.status === 200) return;
    if (res?.status === 401) throw new PortTaken(`${url} is another process's vault`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function spawnVaultOn(port: number, options: SpawnVaultOptions): Promise<VaultProcess> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'vault-proc-'));
  const keys = testKeyPair();
  const env: Record<string, string> = {
    VAULT_HOST: '127.0.0.1',
    VAULT_PORT: String(port),
    VAULT_DATA_DIR: dataDir,
    VAULT_ADMIN_API_KEY: `admin_${randomBytes(16).toString('hex')}`,
    VAULT_ENCRYPTION_PUBLIC_KEY: keys.publicKey,
    VAULT_LOG_LEVEL: 'warn',
    ...options.env,
  };
  // The suite's PostgreSQL pass: every spawned vault gets a fresh database of its own.
  let dropDatabase: (() => Promise<void>) | undefined;
  if (process.env.VAULT_TEST_DB === 'postgres' && !env.VAULT_DB) {
    const database = await createPostgresDatabase();
    env.VAULT_DB = database.url;
    dropDatabase = database.drop;
  }
  let out = '';
  // The compiled build is what `npm start` runs; tests otherwise run the sources as they are.
  const entry = options.compiled ? [...VAULT_NODE_FLAGS, join(options.compiled, 'core/src/main.js')] : ['--import', 'tsx', join(REPO_ROOT, 'core/src/main.ts')];
  const child = spawn(process.execPath, entry, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await Promise.race([
      (async () => {
        await waitForHttp(`${url}/openapi.json`);
        if (env.VAULT_ADMIN_API_KEY) await answersWithKey(url, env.VAULT_ADMIN_API_KEY);
      })(),
      exited.then((code) => {
        if (out.includes('EADDRINUSE')) throw new PortTaken(`port ${port} was taken:\n${out}`);
        throw new Error(`vault exited with ${code} before answering:\n${out}`);
      }),
    ]);
  } catch (err) {
    // A vault that never answered must not outlive the test that started it.
    child.kill('SIGKILL');
    await dropDatabase?.().catch(() => {});
    if (err instanceof PortTaken && !options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const cleanup = async (): Promise<void> => {
    await dropDatabase?.();
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    await options.inheritedCleanup?.();
  };
  const proc: VaultProcess = {
    url,
    port,
    adminKey: env.VAULT_ADMIN_API_KEY,
    keys,
    dataDir,
    env,
    child,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
    restart: () => spawnVault({ env, dataDir, port, compiled: options.compiled, inheritedCleanup: cleanup }),
    async dispose() {
      await proc.stop('SIGKILL');
      await cleanup();
    },
  };
  return proc;
}

/** Runs the operator's command line against the vault configured by `env`; returns stdout. */
export function runVaultCli(args: string[], env: Record<string, string>): string {
  return execFileSync(process.execPath, [join(REPO_ROOT, 'core/bin/vault.mjs'), ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
}

/** One JSON request to a vault process as its admin. */
export async function callVault(v: VaultProcess, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${v.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${v.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as any };
}
