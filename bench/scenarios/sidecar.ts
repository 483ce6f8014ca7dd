/**
 * The sidecar (`npm run sidecar`'s entry point, a process of its own), against a real vault
 * process and the Redis on 127.0.0.1:6379 (REDIS_URL overrides), under a queue name and key
 * prefix unique to the run; every key under that prefix is deleted afterwards.
 *
 * - sidecar-ingest: POST /events with 100 events per request for the measured duration, then
 *   the clock runs until the vault has recorded every accepted event. The figure is accepted
 *   events / (time from the first ingest to the last event recorded in the vault).
 * - reverse-proxy: GET /data/{id} on the baseline server, called directly and through the
 *   sidecar's reverse proxy (a route that reports each read as a READ event), with one
 *   connection (the latency one request pays) and with 64 (what it costs under load).
 * - sidecar-rss: a sidecar whose vault is unreachable takes 1M events (quick: 10k); its peak
 *   resident memory is read while Redis holds them all.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Api, inParallel } from '../api.js';
import { job, problemsOf, type BenchContext } from '../context.js';
import { jsonRequests, type Measurement } from '../load.js';
import { startBaseline, startSidecar, startVault, tempDir, whileProfiling, type BaselineProcess, type SidecarProcess } from '../processes.js';
import { freePort, type VaultProcess } from '../../core/src/testing/process.js';
import { adminApi, createApplication, defineAttributes } from './shared.js';
import { auditEvents } from './audit.js';
import type { Figure } from '../report.js';

export const SCENARIOS = ['sidecar-ingest', 'reverse-proxy', 'sidecar-rss'];

const ATTRIBUTE = 'BENCH_AUDITED';
const PROXIED = 'BENCH_PROXIED';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Deletes every Redis key of one run's prefix. */
async function dropPrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: true });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

async function redisUsedMb(): Promise<number | undefined> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: true });
  try {
    await redis.connect();
    const info = await redis.info('memory');
    const bytes = /used_memory:(\d+)/.exec(info)?.[1];
    return bytes ? Number(bytes) / 1024 / 1024 : undefined;
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

/** A Prometheus counter or gauge of the sidecar, summed over its labels. */
async function metric(sidecar: SidecarProcess, name: string): Promise<number> {
  const text = await (await fetch(`${sidecar.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** How many events of this application the vault's activity log holds (at least `n`?). */
async function vaultHas(vault: VaultProcess, applicationId: string, n: number): Promise<boolean> {
  if (n === 0) return true;
  // The n-th record exists: pages of 1000 (the API's largest), so page numbers stay in range.
  const body = await adminApi(vault).ok('GET', `/activity?applicationId=${encodeURIComponent(applicationId)}&count=1000&page=${Math.floor((n - 1) / 1000)}`);
  return Array.isArray(body.data) && body.data.length > (n - 1) % 1000;
}

async function waitUntil(deadlineMs: number, check: () => Promise<boolean>, everyMs = 100): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return check();
}

function sidecarEnv(prefix: string, vaultUrl: string, apiKey: string, extra: Record<string, string> = {}): Record<string, string> {
  return { SIDECAR_VAULT_URL: vaultUrl, SIDECAR_API_KEY: apiKey, REDIS_URL, SIDECAR_QUEUE: 'bench', SIDECAR_PREFIX: prefix, ...extra };
}

export async function runSidecar(ctx: BenchContext): Promise<void> {
  const wanted = SCENARIOS.filter((s) => ctx.wants(s));
  if (wanted.length === 0) return;
  const prefix = `bench-${randomBytes(6).toString('hex')}`;
  const dir = tempDir('sidecar');
  let vault: VaultProcess | undefined;
  let baseline: BaselineProcess | undefined;
  const sidecars: SidecarProcess[] = [];
  try {
    ctx.log('sidecar: starting vault');
    vault = await startVault();
    await defineAttributes(vault, [
      { key: ATTRIBUTE, schema: 'string', repeatable: true },
      { key: PROXIED, schema: 'string', repeatable: true },
    ]);
    const app = await createApplication(vault, [ATTRIBUTE, PROXIED]);
    if (ctx.wants('sidecar-ingest')) await ingest(ctx, vault, app, `${prefix}-ingest`, sidecars);
    if (ctx.wants('reverse-proxy')) {
      baseline = await startBaseline();
      await reverseProxy(ctx, vault, baseline, app, `${prefix}-proxy`, dir, sidecars);
    }
    if (ctx.wants('sidecar-rss')) await queuedMemory(ctx, app, `${prefix}-rss`, sidecars);
  } catch (err) {
    // A failing call to a sidecar usually means the sidecar died: say what it said.
    const said = sidecars.map((s) => `sidecar (exit ${s.child.exitCode ?? s.child.signalCode ?? 'running'}):\n${s.output().slice(-3000)}`).join('\n');
    throw new Error(`${(err as Error).message}\n${said}`, { cause: err });
  } finally {
    for (const s of sidecars) await s.stop();
    await vault?.dispose();
    await baseline?.dispose();
    for (const suffix of ['ingest', 'proxy', 'rss']) await dropPrefix(`${prefix}-${suffix}`).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

async function ingest(ctx: BenchContext, vault: VaultProcess, app: { id: string; apiKey: string }, prefix: string, sidecars: SidecarProcess[]): Promise<void> {
  const perRequest = 100;
  ctx.log('sidecar-ingest: starting sidecar');
  const sidecar = await startSidecar(sidecarEnv(prefix, vault.url, app.apiKey));
  sidecars.push(sidecar);
  const ingestApi = new Api(sidecar.url);
  // Warm-up outside the clock: connections, JIT, the vault's caches, the first batches.
  const warm = ctx.quick ? 1_000 : 10_000;
  await inParallel(warm / perRequest, 8, async (i) => {
    await ingestApi.ok('POST', '/events', auditEvents(app.id, perRequest, i, ATTRIBUTE), {}, [202]);
  });
  if (!(await waitUntil(60_000, () => vaultHas(vault, app.id, warm), 200))) throw new Error('sidecar warm-up events never reached the vault');

  const pool = jsonRequests('POST', {}, Array.from({ length: 8 }, (_, seed) => ({ path: '/events', body: auditEvents(app.id, perRequest, seed, ATTRIBUTE) })));
  const side = { name: 'sidecar', url: sidecar.url, pool };
  ctx.log('sidecar-ingest: ingesting');
  const started = performance.now();
  const { load, accepted, problems, deadline, recorded, ingestSec, endToEndSec } = await whileProfiling([vault.url], 'sidecar-ingest', async () => {
    const load: Measurement = await ctx.load.run(job(ctx, side, { warmupSec: 0 }));
    const ingestSec = (performance.now() - started) / 1000;
    const accepted = load.ok * perRequest;
    const problems = await problemsOf('POST /events', side, load);
    ctx.log(`sidecar-ingest: ${accepted} events accepted; waiting for the vault to record them`);
    const deadline = Math.max(120_000, ingestSec * 20_000);
    const delivered = await waitUntil(deadline, async () => (await metric(sidecar, 'sidecar_events_delivered_total')) >= warm + accepted, 50);
    const recorded = delivered && (await vaultHas(vault, app.id, warm + accepted));
    return { load, accepted, problems, deadline, recorded, ingestSec, endToEndSec: (performance.now() - started) / 1000 };
  });
  if (!recorded) problems.push(`only part of ${accepted} accepted events reached the vault within ${(deadline / 1000).toFixed(0)} s`);
  const deadLettered = await metric(sidecar, 'sidecar_events_dead_lettered_total');
  if (deadLettered > 0) problems.push(`${deadLettered} events were dead-lettered`);
  const bulk = ctx.figures.find((f) => f.scenario === 'audit-bulk' && f.name.includes('1000') && f.value);
  const figure: Figure = {
    scenario: 'sidecar-ingest',
    name: `ingest to recorded in vault (${perRequest} per POST /events)`,
    unit: 'events/s',
    value: accepted / endToEndSec,
    baseline: bulk?.value ? { name: 'vault bulk audit direct', value: bulk.value } : undefined,
    ratio: bulk?.value ? accepted / endToEndSec / bulk.value : undefined,
    target: { text: '>= 10,000 events/s', pass: accepted / endToEndSec >= 10_000 && !problems.length },
    problems: problems.length ? problems : undefined,
    notes: [
      `${accepted} events accepted in ${ingestSec.toFixed(1)} s (${Math.round(accepted / ingestSec)} events/s at the ingest API, p50 ${load.p50.toFixed(1)} ms), all recorded after ${endToEndSec.toFixed(1)} s`,
    ],
    load,
  };
  ctx.figures.push(figure);
}

async function reverseProxy(
  ctx: BenchContext,
  vault: VaultProcess,
  baseline: BaselineProcess,
  app: { id: string; apiKey: string },
  prefix: string,
  dir: string,
  sidecars: SidecarProcess[],
): Promise<void> {
  // The upstream's rows, and the same points reported to the vault as the application's own
  // (report-only) data, so the READ events the proxy produces refer to points the vault knows.
  const upstream = new Api(baseline.url);
  const points: { id: string; subject: string }[] = [];
  for (let s = 0; s < 50; s++) {
    const body = await upstream.ok('POST', `/entities/bench-proxied-${s}/attributes`, { data: [{ attribute: PROXIED, value: `value ${s}` }] });
    points.push({ id: body.data[0].dataPointId, subject: `bench-proxied-${s}` });
  }
  await new Api(vault.url, { authorization: `Bearer ${app.apiKey}` }).ok(
    'POST',
    '/auditlogs/bulk',
    points.map((p) => ({ eventType: 'STORE', dataPointId: p.id, subjectId: p.subject, applicationId: app.id, data: { attribute: PROXIED } })),
  );
  const routesFile = join(dir, 'routes.json');
  writeFileSync(
    routesFile,
    JSON.stringify({
      applicationId: app.id,
      routes: [{ method: 'GET', path: '/data/:id', eventType: 'READ', attributes: { [PROXIED]: {} }, dataPointId: '{params.id}' }],
    }),
  );
  ctx.log('reverse-proxy: starting sidecar in front of the baseline server');
  const sidecar = await startSidecar(sidecarEnv(prefix, vault.url, app.apiKey, { SIDECAR_UPSTREAM: baseline.url, SIDECAR_ROUTES: routesFile }));
  sidecars.push(sidecar);
  const pool = jsonRequests('GET', {}, points.map((p) => ({ path: `/data/${p.id}` })));
  const direct = { name: 'upstream direct', url: baseline.url, pool };
  const proxied = { name: 'through the sidecar', url: sidecar.proxyUrl!, pool };

  for (const connections of [1, ctx.settings.connections]) {
    ctx.log(`reverse-proxy: ${connections} connection(s), direct then proxied`);
    const d = await ctx.load.run(job(ctx, direct, { connections }));
    const p = await ctx.load.run(job(ctx, proxied, { connections }));
    const problems = [...(await problemsOf(direct.name, direct, d)), ...(await problemsOf(proxied.name, proxied, p))];
    const common = { scenario: 'reverse-proxy', problems: problems.length ? problems : undefined };
    if (connections === 1) {
      ctx.figures.push({
        ...common,
        name: 'added latency p50, 1 connection',
        unit: 'ms',
        value: p.p50 - d.p50,
        p50: p.p50,
        p99: p.p99,
        baseline: { name: 'upstream direct p50', value: d.p50, p50: d.p50, p99: d.p99 },
        target: { text: '<= 1 ms', pass: p.p50 - d.p50 <= 1 && !problems.length },
        notes: ['value = proxied p50 - direct p50, one request at a time: the latency the proxy adds to a request'],
        load: p,
        baselineLoad: d,
      });
      ctx.figures.push({ ...common, name: 'added latency p99, 1 connection', unit: 'ms', value: p.p99 - d.p99, p50: p.p50, p99: p.p99, baseline: { name: 'upstream direct p99', value: d.p99 } });
    } else {
      ctx.figures.push({
        ...common,
        name: `proxied throughput, ${connections} connections`,
        unit: 'req/s',
        value: p.rps,
        p50: p.p50,
        p99: p.p99,
        baseline: { name: 'upstream direct', value: d.rps, p50: d.p50, p99: d.p99 },
        ratio: p.rps / d.rps,
        notes: [`under load the proxy adds ${(p.p50 - d.p50).toFixed(2)} ms at p50 and ${(p.p99 - d.p99).toFixed(2)} ms at p99 (it shares the 2 cores with upstream and load generator)`],
        load: p,
        baselineLoad: d,
      });
    }
  }
  const lost = await metric(sidecar, 'sidecar_proxy_events_lost_total');
  const settled = await waitUntil(60_000, async () => (await metric(sidecar, 'sidecar_events_delivered_total')) + (await metric(sidecar, 'sidecar_events_dead_lettered_total')) >= (await metric(sidecar, 'sidecar_events_accepted_total')), 200);
  const deadLettered = await metric(sidecar, 'sidecar_events_dead_lettered_total');
  const trouble = [lost > 0 ? `${lost} proxy events lost` : '', deadLettered > 0 ? `${deadLettered} proxy events dead-lettered (the vault refused them)` : '', settled ? '' : 'proxy events not all delivered within 60 s'].filter(Boolean);
  if (trouble.length) {
    const f = ctx.figures.find((x) => x.scenario === 'reverse-proxy')!;
    f.problems = [...(f.problems ?? []), ...trouble];
  }
}

async function queuedMemory(ctx: BenchContext, app: { id: string; apiKey: string }, prefix: string, sidecars: SidecarProcess[]): Promise<void> {
  const total = ctx.quick ? 10_000 : 1_000_000;
  const perRequest = 1000;
  // Nothing listens there: every delivery fails and is retried, so the events stay queued.
  const deadVault = `http://127.0.0.1:${await freePort()}`;
  ctx.log(`sidecar-rss: queueing ${total} events with the vault away`);
  const redisBefore = await redisUsedMb();
  const sidecar = await startSidecar(sidecarEnv(prefix, deadVault, app.apiKey));
  sidecars.push(sidecar);
  const ingestApi = new Api(sidecar.url);
  const bodies = Array.from({ length: 8 }, (_, seed) => auditEvents(app.id, perRequest, seed, ATTRIBUTE));
  const started = performance.now();
  await inParallel(total / perRequest, 4, async (i) => {
    await ingestApi.ok('POST', '/events', bodies[i % bodies.length], {}, [202]);
  });
  const seconds = (performance.now() - started) / 1000;
  const accepted = await metric(sidecar, 'sidecar_events_accepted_total');
  const rss = sidecar.peakRssMb();
  const redisAfter = await redisUsedMb();
  ctx.figures.push({
    scenario: 'sidecar-rss',
    name: `sidecar peak RSS holding ${total >= 1_000_000 ? `${total / 1_000_000}M` : `${total / 1000}k`} queued events`,
    unit: 'MB',
    value: rss ?? null,
    problems: rss === undefined ? ['could not read /proc/<pid>/status'] : accepted < total ? [`only ${accepted} of ${total} events accepted`] : undefined,
    notes: [
      `ingested at ${Math.round(total / seconds)} events/s (${perRequest} per request, 4 in flight) with the vault unreachable`,
      ...(redisBefore !== undefined && redisAfter !== undefined ? [`Redis used memory grew by ${(redisAfter - redisBefore).toFixed(0)} MB`] : []),
    ],
  });
}
