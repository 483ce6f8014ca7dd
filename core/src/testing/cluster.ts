/**
 * Several vault processes on one database, as an operator scales the vault out: for the
 * multi-process suites (test/multiprocess*.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresDatabase } from './harness.js';
import { spawnVault, type VaultProcess } from './process.js';

export type Backend = 'postgres' | 'sqlite';

export interface Cluster {
  vaults: VaultProcess[];
  /** One JSON request as the admin, to process `i` modulo their number. */
  call(i: number, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
}

/** A fresh database of its own: a PostgreSQL database, or an SQLite file every process opens. */
async function database(backend: Backend): Promise<{ url: string; drop(): Promise<void> }> {
  if (backend === 'postgres') return createPostgresDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'vault-shared-sqlite-'));
  return { url: `sqlite:${join(dir, 'vault.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** `count` processes sharing a database, keys and admin key; stopped and dropped at the test's teardown. */
export async function cluster(t: { teardown(fn: () => Promise<void>): void }, backend: Backend, count: number, env: Record<string, string> = {}): Promise<Cluster> {
  const db = await database(backend);
  const shared = {
    VAULT_DB: db.url,
    VAULT_INDEX_KEY: randomBytes(32).toString('base64'),
    VAULT_ADMIN_API_KEY: `admin_${randomBytes(16).toString('hex')}`,
    VAULT_RATE_LIMIT_MAX: '0',
    ...env,
  };
  // Started together: migrations, seeding and the admin bootstrap race each other too.
  const started = await Promise.allSettled(Array.from({ length: count }, () => spawnVault({ env: shared })));
  const vaults = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  t.teardown(async () => {
    await Promise.all(vaults.map((v) => v.dispose()));
    await db.drop();
  });
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return {
    vaults,
    async call(i, method, path, body, headers = {}) {
      const v = vaults[i % vaults.length];
      const res = await fetch(`${v.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${v.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
}

/** Calls `fn` until `done` holds of its answer or `ms` pass; returns the last answer. */
export async function within<T>(ms: number, fn: () => Promise<T>, done: (answer: T) => boolean): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await fn();
    if (done(answer) || Date.now() > deadline) return answer;
    await new Promise((r) => setTimeout(r, 50));
  }
}
