/**
 * Two builds of the vault in one process, measured in alternating batches: what a change does
 * to the vault's CPU per request, on a machine whose speed drifts by more than the change.
 *
 *   git worktree add /tmp/before <commit> && (cd /tmp/before && ln -s "$PWD/../main/node_modules" . && npm run build)
 *   npm run build && node --import tsx bench/ab.ts /tmp/before .
 *
 * Each side is a vault on its own SQLite file with the same data (200 subjects of 20 points),
 * driven through Fastify's inject (no sockets), 64 requests in flight (`AB_IN_FLIGHT`): reads
 * by id, subject reads, stores of one value, and bulk audits of 1000 new points (`AB_ONLY=bulk`
 * runs only the scenarios whose names start so; `AB_PAIRS` sets the pairs, 25 by default).
 * Batches of the two sides follow each other, so both meet the same machine; the figure is
 * the median over pairs of B's cost per request divided by A's: the process's CPU (every
 * thread), and the main thread's busy time, which bounds throughput once work moves to other
 * threads. Throughput and latency stay `npm run bench`'s job.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';

/** A GET of a path, or a POST of a JSON body. */
type Request = string | { url: string; body: string };

interface Side {
  name: string;
  inject: (request: Request) => Promise<number>;
  close: () => Promise<void>;
  ids: string[];
}

const FIELDS = Array.from({ length: 20 }, (_, i) => `AB_F${i}`);
/** A repeatable, indexed attribute for the store scenario. */
const NOTE = 'AB_NOTE';
const SUBJECTS = 200;
const PAIRS = Number(process.env.AB_PAIRS ?? 25);

async function start(root: string, keys: { publicKey: string; privateKey: string }): Promise<Side> {
  const load = (module: string) => import(pathToFileURL(join(root, 'dist/core/src', module)).href);
  const [{ loadConfig }, { createLogger }, { Vault }, { buildServer }] = await Promise.all([load('config.js'), load('logger.js'), load('vault.js'), load('http/server.js')]);
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-ab-'));
  const admin = `admin_${randomBytes(16).toString('hex')}`;
  const config = loadConfig({
    VAULT_DATA_DIR: dataDir,
    VAULT_ADMIN_API_KEY: admin,
    VAULT_ENCRYPTION_PUBLIC_KEY: keys.publicKey,
    VAULT_INDEX_KEY: randomBytes(32).toString('base64'),
    VAULT_LOG_LEVEL: 'warn',
    // The benchmark's vaults limit rates (as production does); AB_RATE_LIMIT_MAX=100000000 measures that too.
    VAULT_RATE_LIMIT_MAX: process.env.AB_RATE_LIMIT_MAX ?? '0',
  });
  const vault = await Vault.open({ config, logger: createLogger('warn'), announce: () => {} });
  const app = await buildServer(vault);
  await app.ready();
  const call = async (method: string, url: string, key: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, payload: body ? JSON.stringify(body) : undefined });
    if (res.statusCode >= 300) throw new Error(`${root}: ${method} ${url} answered ${res.statusCode}: ${res.body}`);
    return res.json();
  };
  for (const key of FIELDS) await call('POST', '/attributes', admin, { key, schema: 'string' });
  await call('POST', '/attributes', admin, { key: NOTE, schema: 'string', repeatable: true, indexed: true });
  const appKey = (await call('POST', '/applications', admin, { name: 'ab', attributes: [...FIELDS, NOTE], admin: false })).data.apiKey as string;
  const ids: string[] = [];
  for (let s = 0; s < SUBJECTS; s++) {
    const stored = await call('POST', `/entities/ab-${s}/attributes`, appKey, { data: FIELDS.map((attribute, j) => ({ attribute, value: `value ${s} ${j}`.padEnd(40, '.') })) }, { 'x-encryption-key': keys.publicKey });
    ids.push(...stored.data.map((p: { dataPointId: string }) => p.dataPointId));
  }
  const headers = { authorization: `Bearer ${appKey}`, 'x-decryption-key': keys.privateKey, 'x-encryption-key': keys.publicKey };
  return {
    name: root,
    ids,
    inject: async (request) =>
      (
        typeof request === 'string'
          ? await app.inject({ method: 'GET', url: request, headers })
          : await app.inject({ method: 'POST', url: request.url, headers: { ...headers, 'content-type': 'application/json' }, payload: request.body })
      ).statusCode,
    close: async () => {
      await app.close();
      await vault.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface Cost {
  /** The process's CPU, every thread's. */
  cpu: number;
  /** The main thread's time: what bounds throughput while it is the busiest thread. */
  main: number;
}

/** µs per request over `n` requests, `AB_IN_FLIGHT` (64) of them in flight. */
async function batch(side: Side, n: number, path: (side: Side, i: number) => Request): Promise<Cost> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const status = await side.inject(path(side, next++));
      if (status !== 200 && status !== 201) throw new Error(`${side.name} answered ${status}`);
    }
  };
  const before = process.cpuUsage();
  const loop = performance.eventLoopUtilization();
  await Promise.all(Array.from({ length: Number(process.env.AB_IN_FLIGHT ?? 64) }, worker));
  const used = process.cpuUsage(before);
  return { cpu: (used.user + used.system) / n, main: (performance.eventLoopUtilization(loop).active * 1000) / n };
}

const sum = (values: number[]) => values.reduce((x, y) => x + y, 0);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

async function main(): Promise<void> {
  const [a, b] = process.argv.slice(2).map((p) => resolve(p));
  if (!a || !b) {
    process.stderr.write('usage: node --import tsx bench/ab.ts <repository A> <repository B>   (each with dist/ built)\n');
    process.exit(2);
  }
  const { generateKeyPair } = await import(pathToFileURL(join(b, 'dist/core/src/crypto/keys.js')).href);
  const keys = generateKeyPair(2048);
  const sides = [await start(a, keys), await start(b, keys)];
  // As the benchmark's bulk audit: STORE events without ids, so every event is a new point.
  const bulk = (i: number) =>
    JSON.stringify(
      Array.from({ length: 1000 }, (_, j) => ({ eventType: 'STORE', subjectId: `ab-bulk-${i}-${j % 50}`, applicationId: 'ab', data: { attribute: FIELDS[j % FIELDS.length], value: 'v'.repeat(100) } })),
    );
  // Made before measuring: both sides would pay for it alike and the ratio would shrink.
  const bodies = Array.from({ length: 8 }, (_, i) => bulk(i));
  const scenarios: [string, number, (side: Side, i: number) => Request][] = [
    ['read by id', 2000, (side, i) => `/data/${side.ids[(i * 7919) % side.ids.length]}`],
    ['subject read of 20 points', 300, (_, i) => `/entities/ab-${(i * 31) % SUBJECTS}/attributes`],
    ['store of one value', 500, (_, i) => ({ url: `/entities/ab-${(i * 31) % SUBJECTS}/attributes`, body: JSON.stringify({ data: [{ attribute: NOTE, value: `note ${i}`.padEnd(100, '.') }] }) })],
    ['bulk audit of 1000 events', 8, (_, i) => ({ url: '/auditlogs/bulk', body: bodies[i % bodies.length] })],
  ];
  try {
    const only = process.env.AB_ONLY?.split(',');
    for (const [name, n, path] of scenarios.filter(([name]) => !only || only.some((o) => name.startsWith(o)))) {
      for (const side of sides) await batch(side, n, path);
      const costs: Cost[][] = [[], []];
      for (let pair = 0; pair < PAIRS; pair++) for (let s = 0; s < 2; s++) costs[s].push(await batch(sides[s], n, path));
      for (const [what, of] of [['CPU', (c: Cost) => c.cpu], ['main-thread time', (c: Cost) => c.main]] as const) {
        const [a, b] = costs.map((side) => side.map(of));
        const ratios = a.map((x, i) => b[i] / x);
        process.stdout.write(
          `${name}: A ${median(a).toFixed(0)} µs, B ${median(b).toFixed(0)} µs ${what} per request (medians); ` +
            `B/A ${median(ratios).toFixed(3)} (median of ${PAIRS} pairs, ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}; ` +
            `of the sums ${(sum(b) / sum(a)).toFixed(3)}, which counts rare stalls the median leaves out)\n`,
        );
      }
    }
  } finally {
    for (const side of sides) await side.close();
  }
}

await main();
