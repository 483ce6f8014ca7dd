/**
 * Search by value as the store grows (10k, 100k, 1M points; quick: 1k, 2k, 5k), and the
 * vault's peak memory once it holds the largest size.
 *
 * The vault is seeded through its own API: store requests of SEED_BATCH values of one
 * indexed, repeatable attribute, each for a new subject, several in flight. That is the
 * slow honest path (every value encrypted and blind-indexed as users' values are); the seeding
 * rate is reported as a figure of its own. The baseline's reference rows go straight into its
 * SQLite file (it has no work to skip).
 */
import { Api, inParallel } from '../api.js';
import { compare, type BenchContext } from '../context.js';
import { jsonRequests } from '../load.js';
import { openBaselineDatabase } from '../baseline.js';
import { peakRssMb, startVaultAndBaseline } from '../processes.js';
import { check, createApplication, defineAttributes, storeHeaders, textValue } from './shared.js';
import type { Figure } from '../report.js';

export const SCENARIOS = ['search', 'vault-rss'];

const ATTRIBUTE = 'BENCH_SEARCH';
const SEED_BATCH = 200;
const QUERIES = 1000;

export function searchSizes(quick: boolean): number[] {
  return quick ? [1_000, 2_000, 5_000] : [10_000, 100_000, 1_000_000];
}

function label(n: number): string {
  return n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1_000}k`;
}

/** Deterministic pseudo-random indexes below `size`, so every query matches exactly one point. */
function sample(size: number, count: number): number[] {
  let x = 2463534242;
  return Array.from({ length: count }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % size;
  });
}

const valueOf = (i: number) => textValue(i, 100, 's');

export async function runSearch(ctx: BenchContext): Promise<void> {
  if (!SCENARIOS.some((s) => ctx.wants(s))) return;
  const sizes = searchSizes(ctx.quick);
  const largest = sizes[sizes.length - 1];
  ctx.log('search: starting vault and baseline');
  const { vault, baseline } = await startVaultAndBaseline();
  try {
    await defineAttributes(vault, [{ key: ATTRIBUTE, schema: 'string', repeatable: true, indexed: true }]);
    const app = await createApplication(vault, [ATTRIBUTE]);
    const store = new Api(vault.url, storeHeaders(app.apiKey, vault));
    const baselineDb = openBaselineDatabase(baseline.dbPath);
    const insert = baselineDb.prepare('INSERT INTO points VALUES (?, ?, ?, ?, ?, ?)');
    const seedBaseline = baselineDb.transaction((from: number, to: number) => {
      const now = new Date().toISOString().replace('Z', '+00:00');
      for (let i = from; i < to; i++) insert.run(`b${i}`, `bench-search-${Math.floor(i / SEED_BATCH)}`, ATTRIBUTE, JSON.stringify(valueOf(i)), now, now);
    });

    let stored = 0;
    let seedMs = 0;
    const p50s: { size: number; p50: number }[] = [];
    for (const size of sizes) {
      ctx.log(`search: seeding to ${label(size)} points`);
      const started = performance.now();
      const firstBatch = stored / SEED_BATCH;
      await inParallel((size - stored) / SEED_BATCH, 4, async (k) => {
        const batch = firstBatch + k;
        const data = Array.from({ length: SEED_BATCH }, (_, j) => ({ attribute: ATTRIBUTE, value: valueOf(batch * SEED_BATCH + j) }));
        await store.ok('POST', `/entities/bench-search-${batch}/attributes`, { data });
      });
      seedMs += performance.now() - started;
      seedBaseline(stored, size);
      stored = size;

      const queries = sample(size, QUERIES).map((i) => ({ path: '/search', body: { query: { values: [{ attribute: ATTRIBUTE, value: valueOf(i) }] } } }));
      const hits = await new Api(vault.url, { authorization: `Bearer ${app.apiKey}` }).ok('POST', '/search', queries[0].body);
      const baseHits = await new Api(baseline.url).ok('POST', '/search', queries[0].body);
      check(hits.data.length === 1 && baseHits.data.length === 1, `a search for one stored value found ${hits.data.length} points in the vault, ${baseHits.data.length} in the baseline; expected 1`);
      const figure = await compare(ctx, {
        scenario: 'search',
        name: `search by value at ${label(size)} points`,
        vault: { name: 'vault', url: vault.url, pool: jsonRequests('POST', { authorization: `Bearer ${app.apiKey}` }, queries) },
        baseline: { name: 'baseline', url: baseline.url, pool: jsonRequests('POST', {}, queries) },
      });
      p50s.push({ size, p50: figure.p50 ?? NaN });
    }
    baselineDb.close();

    const seeding: Figure = {
      scenario: 'search',
      name: `seeding through the API (${SEED_BATCH} values per store, 4 in flight)`,
      unit: 'points/s',
      value: largest / (seedMs / 1000),
      notes: [`${label(largest)} points stored in ${(seedMs / 1000).toFixed(1)} s`],
    };
    ctx.figures.push(seeding);
    const first = p50s[0];
    const last = p50s[p50s.length - 1];
    ctx.figures.push({
      scenario: 'search',
      name: `search p50 growth, ${label(last.size)} vs ${label(first.size)}`,
      unit: 'x',
      value: last.p50 / first.p50,
      target: { text: '<= 2x', pass: last.p50 / first.p50 <= 2 },
      notes: [`p50 ${p50s.map((p) => `${label(p.size)}: ${p.p50.toFixed(2)} ms`).join(', ')}`],
    });

    if (ctx.wants('vault-rss')) {
      const rss = peakRssMb(vault.child.pid);
      const baseRss = baseline.peakRssMb();
      const figure: Figure = {
        scenario: 'vault-rss',
        name: `vault peak RSS at ${label(largest)} points`,
        unit: 'MB',
        value: rss ?? null,
        baseline: baseRss ? { name: 'baseline', value: baseRss } : undefined,
        ratio: rss && baseRss ? rss / baseRss : undefined,
        target: { text: '<= 300 MB', pass: rss !== undefined && rss <= 300 },
        notes: ['peak (VmHWM) over seeding and searching'],
      };
      if (rss === undefined) figure.problems = ['could not read /proc/<pid>/status'];
      ctx.figures.push(figure);
    }
  } finally {
    await vault.dispose();
    await baseline.dispose();
  }
}
