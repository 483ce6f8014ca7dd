/**
 * Report-only audit logging: POST /auditlogs/bulk with 1, 100 and 1000 events per request,
 * in events per second. Every event is a STORE of a 100-byte value for one of 64 subjects,
 * without a data point id (the vault generates one) or an eventId (nothing is deduplicated),
 * so each event creates a report-only point, runs the rules and appends to the hash chain.
 */
import { compare, type BenchContext } from '../context.js';
import { jsonRequests } from '../load.js';
import { startVaultAndBaseline } from '../processes.js';
import { createApplication, defineAttributes, textValue } from './shared.js';

export const SCENARIOS = ['audit-bulk'];

const ATTRIBUTE = 'BENCH_AUDITED';
const SIZES = [1, 100, 1000];
const BODIES = 8;

export function auditEvents(applicationId: string, count: number, seed: number, attribute = ATTRIBUTE): unknown[] {
  return Array.from({ length: count }, (_, i) => ({
    eventType: 'STORE',
    subjectId: `bench-audit-${(seed * count + i) % 64}`,
    applicationId,
    applicationUser: 'bench',
    data: { attribute, value: textValue(seed * count + i) },
  }));
}

export async function runAudit(ctx: BenchContext): Promise<void> {
  if (!ctx.wants('audit-bulk')) return;
  ctx.log('audit: starting vault and baseline');
  const { vault, baseline } = await startVaultAndBaseline();
  try {
    await defineAttributes(vault, [{ key: ATTRIBUTE, schema: 'string', repeatable: true }]);
    const app = await createApplication(vault, [ATTRIBUTE]);
    for (const n of SIZES) {
      const bodies = Array.from({ length: BODIES }, (_, seed) => ({ path: '/auditlogs/bulk', body: auditEvents(app.id, n, seed) }));
      await compare(ctx, {
        scenario: 'audit-bulk',
        name: `bulk audit, ${n} per request`,
        perRequest: n,
        vault: { name: 'vault', url: vault.url, pool: jsonRequests('POST', { authorization: `Bearer ${app.apiKey}` }, bodies) },
        baseline: { name: 'baseline', url: baseline.url, pool: jsonRequests('POST', {}, bodies) },
        target: n === 1000 ? (f) => ({ text: '>= 20,000 events/s', pass: (f.value ?? 0) >= 20_000 && !f.problems?.length }) : undefined,
      });
    }
  } finally {
    await vault.dispose();
    await baseline.dispose();
  }
}
