import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresDatabase, startTestVault } from '../core/src/testing/harness.js';
import { cleanupRedis, repoRoot, startTestSidecar, uniquePrefix } from '../proxy/src/testing/helpers.js';

/**
 * The metrics an operator reads about in the READMEs, and builds alerts on, are the ones the
 * processes expose: every name the READMEs mention is in a scrape of the vault (SQLite file
 * and PostgreSQL, whose metrics differ) or of the sidecar, and every metric there is
 * described (HELP), typed, and named as Prometheus wants (a counter ends in `_total`).
 */
interface Described {
  type: string;
  help: boolean;
}

function describedMetrics(text: string): Map<string, Described> {
  const metrics = new Map<string, Described>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) metrics.set(name, { type, help: false });
  for (const [, name, help] of text.matchAll(/^# HELP (\S+) (.*)$/gm)) {
    const metric = metrics.get(name);
    if (metric) metric.help = help.trim().length > 0;
  }
  return metrics;
}

async function scrapes(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'vault-metrics-docs-'));
  const database = await createPostgresDatabase();
  const prefix = uniquePrefix('metrics-docs');
  const onFile = await startTestVault({ env: { VAULT_DB: `sqlite:${join(dir, 'vault.db')}` } });
  const onPostgres = await startTestVault({ env: { VAULT_DB: database.url } });
  const sidecar = await startTestSidecar({ apiKey: 'k', vaultUrl: 'http://127.0.0.1:9', prefix });
  try {
    const texts: string[] = [];
    for (const v of [onFile, onPostgres]) {
      await v.request('GET', '/entitytypes');
      texts.push(String((await v.request('GET', '/metrics', { apiKey: null })).body));
    }
    texts.push(await (await fetch(`${sidecar.url}/metrics`)).text());
    return texts;
  } finally {
    await sidecar.close();
    await cleanupRedis(prefix);
    await onFile.close();
    await onPostgres.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('every metric the READMEs name is exposed, and every exposed metric is described and typed', async (t) => {
  const exposed = new Map<string, Described>();
  for (const text of await scrapes()) for (const [name, described] of describedMetrics(text)) exposed.set(name, described);

  for (const [name, { type, help }] of exposed) {
    t.true(help, `${name} has a HELP text`);
    t.true(['counter', 'gauge', 'histogram', 'summary'].includes(type), `${name} has a TYPE`);
    if (type === 'counter') t.regex(name, /_total$/, `${name}: a counter ends in _total`);
    // prom-client's own process metrics name a gauge `nodejs_active_handles_total`: not ours to rename.
    else if (!/^(vault|sidecar)_(process|nodejs)_/.test(name)) t.notRegex(name, /_total$/, `${name}: only a counter ends in _total`);
  }

  const docs = ['README.md', 'proxy/README.md'].map((file) => readFileSync(join(repoRoot, file), 'utf8')).join('\n');
  // A name followed by `*` is a family (`sidecar_process_*`).
  const named = new Set([...docs.matchAll(/\b((?:vault|sidecar)_[a-z0-9_]*[a-z0-9])\b(?!_?\*)/g)].map((m) => m[1]));
  t.true(named.size >= 30, `${named.size} metric names found in the READMEs`);
  for (const name of named) {
    const histogram = /^(.*)_(bucket|sum|count)$/.exec(name);
    const known = exposed.has(name) || (histogram !== null && exposed.get(histogram[1])?.type === 'histogram');
    t.true(known, `${name}, named in a README, is exposed`);
  }
});
