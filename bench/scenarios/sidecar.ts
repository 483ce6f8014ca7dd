/**
 * The sidecar: sustained events per second from ingest to recorded in the vault, the
 * latency its reverse proxy adds, and its peak memory while holding queued events.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../core/src/testing/process.js';
import { skip, type BenchContext } from '../context.js';

export const SCENARIOS = ['sidecar-ingest', 'reverse-proxy', 'sidecar-rss'];

export async function runSidecar(ctx: BenchContext): Promise<void> {
  const wanted = SCENARIOS.filter((s) => ctx.wants(s));
  if (wanted.length === 0) return;
  if (!existsSync(join(REPO_ROOT, 'proxy/src/main.ts'))) {
    for (const s of wanted) skip(ctx, s, s, 'skipped (not implemented)');
    return;
  }
  for (const s of wanted) skip(ctx, s, s, 'skipped (not implemented)');
}
