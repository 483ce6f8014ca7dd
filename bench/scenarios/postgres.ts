/**
 * Several stateless vault processes on one PostgreSQL (issues 8 and 13): store and read-by-id
 * throughput with one process, then two, then four, on a fresh database created for the run
 * and dropped after it. The load generator splits its connections between them (no balancer
 * in between to measure). One process is compared with the same scenario on SQLite in this
 * run, two and four with one; each figure notes the CPU use and the activity-lock waits, so
 * a flat curve shows whether the cores or a lock were the limit.
 */
import { existsSync } from 'node:fs';
import { Api, inParallel } from '../api.js';
import { compare, type BenchContext } from '../context.js';
import { jsonRequests } from '../load.js';
import { startVault } from '../processes.js';
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
  try {
    ctx.log('postgres: starting the first vault');
    const first = await startVault({ VAULT_DB: database.url });
    vaults.push(first);
    await defineAttributes(first, [{ key: NOTE, schema: 'string', repeatable: true, indexed: true }]);
    const app = await createApplication(first, [NOTE]);
    const store = new Api(first.url, storeHeaders(app.apiKey, first));
    const ids: string[] = [];
    await inParallel(entities, 4, async (e) => {
      const body = await store.ok('POST', `/entities/bench-pg-${e}/attributes`, { data: [{ attribute: NOTE, value: textValue(e) }] });
      ids.push(body.data[0].dataPointId);
    });
    const storePool = jsonRequests(
      'POST',
      storeHeaders(app.apiKey, first),
      Array.from({ length: 2000 }, (_, i) => ({ path: `/entities/bench-pg-${i % entities}/attributes`, body: { data: [{ attribute: NOTE, value: textValue(i) }] } })),
    );
    const readPool = jsonRequests('GET', readHeaders(app.apiKey, first), ids.map((id) => ({ path: `/data/${id}` })));

    const sqlite = (scenario: string) => ctx.figures.find((f) => f.scenario === scenario && f.value);
    const relate = (figure: Figure, scenario: string) => {
      const ref = sqlite(scenario);
      if (!ref?.value) {
        figure.notes = [...(figure.notes ?? []), `no SQLite figure for ${scenario} in this run to compare with`];
        return;
      }
      figure.baseline = { name: `vault on SQLite`, value: ref.value, p50: ref.p50, p99: ref.p99 };
      figure.ratio = (figure.value ?? 0) / ref.value;
    };

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
      for (const [kind, pool, sqliteScenario] of [
        ['store', storePool, 'store'],
        ['read by id', readPool, 'read-by-id'],
      ] as const) {
        const figure = await compare(ctx, { scenario: 'postgres', name: `${kind} on PostgreSQL, ${label}`, vault: { name: 'vault', url: urls, pool }, observe: true });
        if (processes === 1) {
          single[kind] = figure;
          relate(figure, sqliteScenario);
          figure.target = { text: '>= 0.6x SQLite', pass: figure.ratio !== undefined && figure.ratio >= 0.6 && !figure.problems?.length };
        } else {
          const one = single[kind];
          figure.baseline = { name: 'one process', value: one.value ?? 0, p50: one.p50, p99: one.p99 };
          figure.ratio = one.value ? (figure.value ?? 0) / one.value : undefined;
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
      for (const [kind, pool] of [
        ['store', storePool],
        ['read by id', readPool],
      ] as const) {
        const figure = await compare(ctx, { scenario: 'postgres', name: `${kind} on PostgreSQL over its Unix socket, 1 process`, vault: { name: 'vault', url: [overSocket.url], pool }, observe: true });
        const tcp = single[kind];
        figure.baseline = { name: 'TCP, one process', value: tcp.value ?? 0, p50: tcp.p50, p99: tcp.p99 };
        figure.ratio = tcp.value ? (figure.value ?? 0) / tcp.value : undefined;
      }
    }
  } finally {
    for (const v of vaults) await v.dispose();
    await database.drop();
  }
}
