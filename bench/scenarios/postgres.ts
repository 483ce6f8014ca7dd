/**
 * Several stateless vault processes on one PostgreSQL (issues 8 and 13): store and read-by-id
 * throughput with one process, then two, then four, on a fresh database created for the run
 * and dropped after it. The load generator splits its connections between them (no balancer
 * in between to measure). One process is compared with the same scenario on SQLite in this
 * run, two and four with one; each figure notes the CPU use and the activity-lock waits, so
 * a flat curve shows whether the cores or a lock were the limit. Every figure is measured
 * beside the baseline server, so that comparisons across minutes can be drift-corrected.
 */
import { existsSync } from 'node:fs';
import { Api, inParallel } from '../api.js';
import { compare, relate, type BenchContext } from '../context.js';
import { jsonRequests } from '../load.js';
import { startBaseline, startVault, type BaselineProcess } from '../processes.js';
import { createPostgresDatabase } from '../../core/src/testing/harness.js';
import { createApplication, defineAttributes, readHeaders, storeHeaders, textValue } from './shared.js';
import type { VaultProcess } from '../../core/src/testing/process.js';
import type { Figure } from '../report.js';

export const SCENARIOS = ['postgres'];

/** The server's default socket directory, when the database is this machine's. */
const SOCKET_DIR = '/var/run/postgresql';

function unixSocketUrl(tcpUrl: string): string | undefined {
  const url = new URL(tcpUrl);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || !existsSync(`${SOCKET_DIR}/.s.PGSQL.${url.port || 5432}`)) return undefined;
  return `postgres://${url.username}${url.password ? `:${url.password}` : ''}@${url.pathname}?host=${SOCKET_DIR}&port=${url.port || 5432}`;
}

const NOTE = 'BENCH_NOTE';

export async function runPostgres(ctx: BenchContext): Promise<void> {
  if (!ctx.wants('postgres')) return;
  const entities = ctx.quick ? 64 : 1000;
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  try {
    database = await createPostgresDatabase();
  } catch (err) {
    ctx.figures.push({ scenario: 'postgres', name: 'PostgreSQL', unit: 'req/s', value: null, problems: [`no PostgreSQL: ${(err as Error).message}`] });
    return;
  }
  const vaults: VaultProcess[] = [];
  let baseline: BaselineProcess | undefined;
  try {
    baseline = await startBaseline();
    ctx.log('postgres: starting the first vault');
    const first = await startVault({ VAULT_DB: database.url });
    vaults.push(first);
    await defineAttributes(first, [{ key: NOTE, schema: 'string', repeatable: true, indexed: true }]);
    const app = await createApplication(first, [NOTE]);
    const store = new Api(first.url, storeHeaders(app.apiKey, first));
    const baselineApi = new Api(baseline.url);
    const ids: string[] = [];
    const baselineIds: string[] = [];
    await inParallel(entities, 4, async (e) => {
      const body = { data: [{ attribute: NOTE, value: textValue(e) }] };
      ids.push((await store.ok('POST', `/entities/bench-pg-${e}/attributes`, body)).data[0].dataPointId);
      baselineIds.push((await baselineApi.ok('POST', `/entities/bench-pg-${e}/attributes`, body)).data[0].dataPointId);
    });
    const stores = (headers: Record<string, string>) =>
      jsonRequests(
        'POST',
        headers,
        Array.from({ length: 2000 }, (_, i) => ({ path: `/entities/bench-pg-${i % entities}/attributes`, body: { data: [{ attribute: NOTE, value: textValue(i) }] } })),
      );
    const reads = (headers: Record<string, string>, pointIds: string[]) => jsonRequests('GET', headers, pointIds.map((id) => ({ path: `/data/${id}` })));
    const pools = {
      store: { vault: stores(storeHeaders(app.apiKey, first)), baseline: stores({}) },
      'read by id': { vault: reads(readHeaders(app.apiKey, first), ids), baseline: reads({}, baselineIds) },
    };
    const measure = (name: string, kind: keyof typeof pools, urls: string[]) =>
      compare(ctx, { scenario: 'postgres', name, vault: { name: 'vault', url: urls, pool: pools[kind].vault }, baseline: { name: 'baseline', url: baseline!.url, pool: pools[kind].baseline }, observe: true });
    const sqlite = (scenario: string) => ctx.figures.find((f) => f.scenario === scenario && f.value);

    const single: Record<string, Figure> = {};
    for (const processes of [1, 2, 4]) {
      while (vaults.length < processes) {
        ctx.log(`postgres: starting vault ${vaults.length + 1}`);
        // Same database, admin key, index key and encryption key: one deployment, several processes.
        const { VAULT_PORT: _port, VAULT_DATA_DIR: _dir, ...shared } = first.env;
        vaults.push(await startVault(shared));
      }
      const urls = vaults.map((v) => v.url);
      const label = `${processes} process${processes > 1 ? 'es' : ''}`;
      for (const [kind, sqliteScenario] of [
        ['store', 'store'],
        ['read by id', 'read-by-id'],
      ] as const) {
        const figure = await measure(`${kind} on PostgreSQL, ${label}`, kind, urls);
        if (processes === 1) {
          single[kind] = figure;
          relate(figure, sqlite(sqliteScenario), 'vault on SQLite');
          figure.target = { text: '>= 0.6x SQLite', pass: figure.ratio !== undefined && figure.ratio >= 0.6 && !figure.problems?.length };
        } else {
          relate(figure, single[kind], 'one process');
          if (processes === 2) figure.target = { text: '>= 1.3x one process', pass: figure.ratio !== undefined && figure.ratio >= 1.3 && !figure.problems?.length };
        }
      }
    }

    // A vault beside its database can reach it over the Unix socket instead of loopback TCP:
    // what that is worth, for operators deciding how to connect (informational, no target).
    const socketUrl = unixSocketUrl(database.url);
    if (socketUrl) {
      for (const v of vaults.splice(0)) await v.dispose();
      ctx.log('postgres: starting a vault connected over the Unix socket');
      const { VAULT_PORT: _port, VAULT_DATA_DIR: _dir, VAULT_DB: _db, ...shared } = first.env;
      const overSocket = await startVault({ ...shared, VAULT_DB: socketUrl });
      vaults.push(overSocket);
      for (const kind of ['store', 'read by id'] as const) {
        const figure = await measure(`${kind} on PostgreSQL over its Unix socket, 1 process`, kind, [overSocket.url]);
        relate(figure, single[kind], 'TCP, one process');
      }
    }
  } finally {
    for (const v of vaults) await v.dispose();
    await baseline?.dispose();
    await database.drop();
  }
}
