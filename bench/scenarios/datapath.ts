/**
 * The data path on SQLite: store one indexed 100-byte value, store a structured value of 6
 * leaves, read one data point by id, read the 20 points of a subject. One vault and one
 * baseline serve all four, each seeded through its HTTP API.
 */
import { Api, inParallel } from '../api.js';
import { compare, ratioTarget, type BenchContext } from '../context.js';
import { jsonRequests } from '../load.js';
import { startVaultAndBaseline } from '../processes.js';
import { check, createApplication, defineAttributes, PROFILE_SCHEMA, profileValue, readHeaders, storeHeaders, textValue } from './shared.js';

export const SCENARIOS = ['store', 'store-structured', 'read-by-id', 'read-subject'];

const NOTE = 'BENCH_NOTE';
const PROFILE = 'BENCH_PROFILE';
const FIELDS = Array.from({ length: 20 }, (_, i) => `BENCH_F${String(i + 1).padStart(2, '0')}`);

export async function runDataPath(ctx: BenchContext): Promise<void> {
  const wanted = SCENARIOS.filter((s) => ctx.wants(s));
  if (wanted.length === 0) return;
  const storeEntities = ctx.quick ? 64 : 1000;
  const subjects = ctx.quick ? 32 : 500;

  ctx.log('data path: starting vault and baseline');
  const { vault, baseline } = await startVaultAndBaseline();
  try {
    await defineAttributes(vault, [
      { key: NOTE, schema: 'string', repeatable: true, indexed: true },
      { key: PROFILE, schema: PROFILE_SCHEMA, repeatable: true, indexed: true },
      ...FIELDS.map((key) => ({ key, schema: 'string' })),
    ]);
    const app = await createApplication(vault, [NOTE, PROFILE, ...FIELDS]);
    const vaultStore = new Api(vault.url, storeHeaders(app.apiKey, vault));
    const baselineApi = new Api(baseline.url);

    // Subjects with 20 points each (one per attribute); their point ids feed read-by-id.
    ctx.log(`data path: seeding ${subjects} subjects x 20 points, and ${storeEntities} store targets`);
    const vaultIds: string[] = [];
    const baselineIds: string[] = [];
    const subjectBody = (s: number) => ({ data: FIELDS.map((attribute, j) => ({ attribute, value: textValue(s * 20 + j, 40) })) });
    await inParallel(subjects, 4, async (s) => {
      const v = await vaultStore.ok('POST', `/entities/bench-subject-${s}/attributes`, subjectBody(s));
      vaultIds.push(...v.data.map((p: { dataPointId: string }) => p.dataPointId));
      const b = await baselineApi.ok('POST', `/entities/bench-subject-${s}/attributes`, subjectBody(s));
      baselineIds.push(...b.data.map((p: { dataPointId: string }) => p.dataPointId));
    });
    // "Entity exists": each store target gets its first value before the measured stores.
    await inParallel(storeEntities, 4, async (e) => {
      const body = { data: [{ attribute: NOTE, value: textValue(e) }] };
      await vaultStore.ok('POST', `/entities/bench-store-${e}/attributes`, body);
      await baselineApi.ok('POST', `/entities/bench-store-${e}/attributes`, body);
    });

    const vh = readHeaders(app.apiKey, vault);
    const sampleVault = await new Api(vault.url, vh).ok('GET', '/entities/bench-subject-0/attributes');
    const sampleBaseline = await baselineApi.ok('GET', '/entities/bench-subject-0/attributes');
    check(sampleVault.data.length === 20 && sampleBaseline.data.length === 20, `a seeded subject reads back ${sampleVault.data.length} points from the vault, ${sampleBaseline.data.length} from the baseline; expected 20`);
    if (ctx.wants('read-by-id')) {
      await compare(ctx, {
        scenario: 'read-by-id',
        name: 'GET /data/{id}, one decrypted point',
        vault: { name: 'vault', url: vault.url, pool: jsonRequests('GET', vh, vaultIds.slice(0, 4000).map((id) => ({ path: `/data/${id}` }))) },
        baseline: { name: 'baseline', url: baseline.url, pool: jsonRequests('GET', {}, baselineIds.slice(0, 4000).map((id) => ({ path: `/data/${id}` }))) },
        target: (f) => {
          const ratio = ratioTarget(0.4)(f);
          return { text: `${ratio.text}, p99 <= 25 ms`, pass: ratio.pass && f.p99 !== undefined && f.p99 <= 25 };
        },
        observe: true,
      });
    }
    if (ctx.wants('read-subject')) {
      const paths = Array.from({ length: subjects }, (_, s) => ({ path: `/entities/bench-subject-${s}/attributes` }));
      await compare(ctx, {
        scenario: 'read-subject',
        name: 'GET /entities/{id}/attributes, 20 points',
        vault: { name: 'vault', url: vault.url, pool: jsonRequests('GET', vh, paths) },
        baseline: { name: 'baseline', url: baseline.url, pool: jsonRequests('GET', {}, paths) },
        target: ratioTarget(0.3),
        observe: true,
      });
      // Sidecars report activity on the same subjects: each audited STORE leaves a report-only
      // point beside the subject's vaulted ones, which its reads must not have to look past.
      const audited = 400;
      ctx.log(`data path: auditing ${audited} stores for each of the ${subjects} subjects`);
      const auditApi = new Api(vault.url, { authorization: `Bearer ${app.apiKey}` });
      const events = (s: number) =>
        Array.from({ length: audited }, (_, i) => ({ eventType: 'STORE', subjectId: `bench-subject-${s}`, applicationId: app.id, data: { attribute: NOTE, value: textValue(i) } }));
      await inParallel(subjects, 4, async (s) => void (await auditApi.ok('POST', '/auditlogs/bulk', events(s))));
      const readBack = await new Api(vault.url, vh).ok('GET', '/entities/bench-subject-0/attributes');
      check(readBack.data.length === 20, `a subject with ${audited} audited stores reads back ${readBack.data.length} points; expected 20`);
      await compare(ctx, {
        scenario: 'read-subject',
        name: `GET /entities/{id}/attributes, 20 points beside ${audited} audited`,
        vault: { name: 'vault', url: vault.url, pool: jsonRequests('GET', vh, paths) },
        baseline: { name: 'baseline', url: baseline.url, pool: jsonRequests('GET', {}, paths) },
        notes: [`each subject also holds ${audited} report-only points from POST /auditlogs/bulk; the baseline has no such rows`],
      });
    }
    const storePool = (attribute: string, value: (i: number) => unknown, headers: Record<string, string>) =>
      jsonRequests(
        'POST',
        headers,
        Array.from({ length: 2000 }, (_, i) => ({ path: `/entities/bench-store-${i % storeEntities}/attributes`, body: { data: [{ attribute, value: value(i) }] } })),
      );
    const sh = storeHeaders(app.apiKey, vault);
    if (ctx.wants('store')) {
      await compare(ctx, {
        scenario: 'store',
        name: 'store one 100-byte indexed value',
        vault: { name: 'vault', url: vault.url, pool: storePool(NOTE, (i) => textValue(i), sh) },
        baseline: { name: 'baseline', url: baseline.url, pool: storePool(NOTE, (i) => textValue(i), {}) },
        target: ratioTarget(0.3),
        observe: true,
      });
    }
    if (ctx.wants('store-structured')) {
      await compare(ctx, {
        scenario: 'store-structured',
        name: 'store a structured value of 6 leaves',
        vault: { name: 'vault', url: vault.url, pool: storePool(PROFILE, profileValue, sh) },
        baseline: { name: 'baseline', url: baseline.url, pool: storePool(PROFILE, profileValue, {}) },
        notes: ['the vault writes 7 points (root + 6 leaves) and 6 blind indexes, the baseline 1 row'],
        target: ratioTarget(0.25),
        observe: true,
      });
    }
  } finally {
    await vault.dispose();
    await baseline.dispose();
  }
}
