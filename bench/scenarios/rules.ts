/**
 * What rule evaluation costs a store: the store scenario with 0, 10 and 100 active data
 * rules. The rules are evaluated in full on every store but none fires (their constraints
 * miss the stored point), so the figure is the evaluation cost, not the cost of alerts.
 * Four constraint shapes take turns: an attribute list, a regex on the stored value, a
 * geolocation (the loopback caller has no country), and an `all` of an attribute that
 * matches and a value comparison that does not.
 */
import { Api, inParallel } from '../api.js';
import { compare, relate, type BenchContext } from '../context.js';
import { jsonRequests } from '../load.js';
import { startVaultAndBaseline } from '../processes.js';
import { adminApi, check, createApplication, defineAttributes, storeHeaders, textValue } from './shared.js';
import type { Figure } from '../report.js';

export const SCENARIOS = ['rules'];

const NOTE = 'BENCH_NOTE';
const OTHER = 'BENCH_OTHER';
const COUNTS = [0, 10, 100];

export function benchRule(i: number): Record<string, unknown> {
  const action = { type: 'alert', alertLevel: 'NORMAL', message: `bench rule ${i} fired` };
  const constraints = [
    { type: 'attribute', operator: 'any', attributes: [OTHER] },
    { type: 'user', attribute: NOTE, predicate: 'regex', value: `^zz${i}z` },
    { type: 'geolocation', operator: 'any', countries: ['FR', 'DE'] },
    { type: 'all', constraints: [{ type: 'attribute', operator: 'any', attributes: [NOTE] }, { type: 'user', attribute: NOTE, predicate: 'eq', value: `never-${i}` }] },
  ];
  return { key: `bench_rule_${i}`, name: `bench rule ${i}`, type: 'data', constraint: constraints[i % constraints.length], action };
}

export async function runRules(ctx: BenchContext): Promise<void> {
  if (!ctx.wants('rules')) return;
  const entities = ctx.quick ? 64 : 1000;
  ctx.log('rules: starting vault and baseline');
  const { vault, baseline } = await startVaultAndBaseline();
  try {
    await defineAttributes(vault, [
      { key: NOTE, schema: 'string', repeatable: true, indexed: true },
      { key: OTHER, schema: 'string' },
    ]);
    const app = await createApplication(vault, [NOTE, OTHER]);
    const store = new Api(vault.url, storeHeaders(app.apiKey, vault));
    await inParallel(entities, 4, async (e) => {
      await store.ok('POST', `/entities/bench-rules-${e}/attributes`, { data: [{ attribute: NOTE, value: textValue(e) }] });
    });
    const pool = (headers: Record<string, string>) =>
      jsonRequests('POST', headers, Array.from({ length: 2000 }, (_, i) => ({ path: `/entities/bench-rules-${i % entities}/attributes`, body: { data: [{ attribute: NOTE, value: textValue(i) }] } })));

    const admin = adminApi(vault);
    let none: Figure | undefined;
    let created = 0;
    for (const n of COUNTS) {
      for (; created < n; created++) await admin.ok('POST', '/rules', benchRule(created));
      const active = await admin.ok('GET', '/rules');
      check(active.data.length === n, `${active.data.length} rules active, expected ${n}`);
      // Every figure is measured beside the stack's ceiling; with rules, it is then related to
      // the same vault without them, measured minutes earlier on a machine that drifts.
      const figure = await compare(ctx, {
        scenario: 'rules',
        name: `store with ${n} active rules`,
        vault: { name: 'vault', url: vault.url, pool: pool(storeHeaders(app.apiKey, vault)) },
        baseline: { name: 'baseline', url: baseline.url, pool: pool({}) },
      });
      if (n === 0) {
        none = figure;
        continue;
      }
      relate(figure, none, '0 rules');
      if (n === COUNTS[COUNTS.length - 1]) {
        const alerts = await admin.ok('GET', '/alerts');
        check(alerts.data.length === 0, `the benchmark's rules are meant never to fire, yet ${alerts.data.length} alerts were recorded`);
      }
      if (n === 100) figure.target = { text: '>= 0.5x 0 rules', pass: figure.ratio !== undefined && figure.ratio >= 0.5 && !figure.problems?.length };
    }
  } finally {
    await vault.dispose();
    await baseline.dispose();
  }
}
