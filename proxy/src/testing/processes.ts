/**
 * Processes a test starts of its own, a redis-server and the sidecar's CLI, each proved to be
 * the one answering: test files run side by side, and another one's server may hold a port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, repoRoot, sharedRedisUrl } from './helpers.js';

/** The port was taken by another process (another test's server) before ours could listen on it. */
class PortTaken extends Error {}

/** A redis-server of the test's own, with AOF fsynced on every write, that can be killed and restarted. */
export class OwnRedis {
  private child: ChildProcess | undefined;

  constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  /**
   * A started server on a free port, its files in a temporary directory of its own. Test files
   * run side by side, so the port freePort() released may be taken before redis-server binds
   * it; then another one is tried.
   */
  static async started(label: string): Promise<OwnRedis> {
    const dir = mkdtempSync(join(tmpdir(), `${label}-`));
    for (let attempt = 1; ; attempt++) {
      const redis = new OwnRedis(await freePort(), dir);
      try {
        await redis.start();
        return redis;
      } catch (err) {
        if (!(err instanceof PortTaken) || attempt >= 5) {
          rmSync(dir, { recursive: true, force: true });
          throw err;
        }
      }
    }
  }

  /** Kills the server and removes its directory. */
  async dispose(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Starts redis-server and waits until it answers: it, not another process's server on the
   * port (one that took it while this one was down answers PING all the same), which is why
   * the answering server's process id must be this child's.
   */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--appendonly', 'yes', '--appendfsync', 'always',
        '--dir', this.dir, '--save', '', '--maxmemory-policy', 'noeviction', '--daemonize', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = once(child, 'exit');
    let settled = false;
    const ready = (async () => {
      const deadline = Date.now() + 10_000;
      while (!settled) {
        const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        probe.on('error', () => {});
        try {
          await probe.connect();
          const server = await probe.info('server');
          if (!new RegExp(`^process_id:${child.pid}\\r?$`, 'm').test(server)) throw new PortTaken(`port ${this.port} is another process's Redis`);
          const loading = (await probe.info('persistence')).includes('loading:1');
          if (!loading && (await probe.ping()) === 'PONG') return;
        } catch (err) {
          if (err instanceof PortTaken) throw err;
        } finally {
          probe.disconnect();
        }
        if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not answer within 10 s:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      await Promise.race([
        ready,
        exited.then(() => {
          if (/address already in use/i.test(output)) throw new PortTaken(`port ${this.port} was taken:\n${output}`);
          throw new Error(`redis-server exited before answering:\n${output}`);
        }),
      ]);
    } catch (err) {
      await this.kill();
      throw err;
    } finally {
      settled = true;
      ready.catch(() => {});
    }
  }

  /** CONFIG SET on this server alone (never on the shared one), e.g. a `maxmemory` to fill. */
  async configSet(parameter: string, value: string): Promise<void> {
    const client = new Redis(this.url, { maxRetriesPerRequest: 1 });
    try {
      await client.config('SET', parameter, value);
    } finally {
      client.disconnect();
    }
  }

  /**
   * SIGSTOP: the server keeps its connections open, so clients still see it as connected, but
   * answers nothing until resume(). What it is sent meanwhile waits in its sockets.
   */
  pause(): void {
    const child = this.child;
    if (child && child.exitCode === null) child.kill('SIGSTOP');
  }

  /** SIGCONT: the server goes on, running whatever it was sent while paused. */
  resume(): void {
    const child = this.child;
    if (child && child.exitCode === null) child.kill('SIGCONT');
  }

  /** SIGKILL: no shutdown save; only what AOF already fsynced survives. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    this.child = undefined;
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
}

export interface SpawnedSidecar {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /**
   * Its own addresses, as its `sidecar listening` line reports them; rejects if it exits
   * first. Never a URL guessed from SIDECAR_PORT: another process's server may answer there.
   */
  listening: Promise<{ url: string; proxyUrl: string | undefined }>;
}

/** A spawned sidecar that listens, at the addresses it reported. */
export interface RunningSidecar extends SpawnedSidecar {
  url: string;
  proxyUrl: string | undefined;
}

/**
 * Settings for a spawned sidecar with short batches, retries and lease, so tests run quickly.
 * Its ports are 0: the kernel gives it free ones as it listens, so no other test's server can
 * take them between a pick and the listen (see `startSpawnedSidecar` for where it listens).
 */
export function spawnedSidecarEnv(options: { apiKey: string; vaultUrl: string; prefix: string; redisUrl?: string }): Record<string, string> {
  return {
    SIDECAR_API_KEY: options.apiKey,
    SIDECAR_VAULT_URL: options.vaultUrl,
    SIDECAR_PORT: '0',
    SIDECAR_PROXY_PORT: '0',
    SIDECAR_PREFIX: options.prefix,
    REDIS_URL: options.redisUrl ?? sharedRedisUrl,
    SIDECAR_BATCH_SIZE: '100',
    SIDECAR_BATCH_MS: '20',
    SIDECAR_LOCK_MS: '2000',
    SIDECAR_RETRY_BASE_MS: '20',
    SIDECAR_RETRY_MAX_MS: '200',
    SIDECAR_LOG_LEVEL: 'info',
  };
}

/** Levels above `info` hide the `sidecar listening` line the helpers read the ports from. */
const quietLevels = new Set(['warn', 'error', 'fatal', 'silent']);

/** Runs the CLI exactly as `npm run sidecar` does. */
export function spawnSidecar(env: Record<string, string>): SpawnedSidecar {
  const child = spawn(process.execPath, ['--import', 'tsx', 'proxy/src/main.ts'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let pending = '';
  let reported: ((addresses: { url: string; proxyUrl: string | undefined }) => void) | undefined;
  const listening = new Promise<{ url: string; proxyUrl: string | undefined }>((resolve) => (reported = resolve));
  child.stdout!.on('data', (chunk) => {
    output += chunk;
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.includes('"sidecar listening"')) continue;
      const { url, proxyUrl } = JSON.parse(line) as { url: string; proxyUrl?: string };
      reported!({ url, proxyUrl });
    }
  });
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const level = env.SIDECAR_LOG_LEVEL?.trim() || 'info';
  const addresses = quietLevels.has(level)
    ? Promise.reject(new Error(`SIDECAR_LOG_LEVEL=${level} hides the line that says where the sidecar listens; use info or debug`))
    : Promise.race([
        listening,
        exited.then((code) => {
          throw new Error(`the sidecar exited with ${code} before it listened:\n${output}`);
        }),
      ]);
  // Config-error tests never ask where it listens.
  addresses.catch(() => {});
  return { child, output: () => output, exited, listening: addresses };
}

/**
 * Spawns a sidecar and waits until it listens; resolves to it with its own URLs. A sidecar
 * that cannot listen (its port held by another process) fails this, and is not left running.
 */
export async function startSpawnedSidecar(env: Record<string, string>): Promise<RunningSidecar> {
  const sidecar = spawnSidecar(env);
  try {
    return { ...sidecar, ...(await sidecar.listening) };
  } catch (err) {
    await stopChild(sidecar.child);
    throw err;
  }
}

export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

