/**
 * A real vault for tests: its own data directory and database (SQLite file by default, a
 * fresh PostgreSQL database when VAULT_TEST_DB=postgres), the full HTTP stack through
 * Fastify's inject, and the log lines it wrote, so tests can look for leaked secrets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { loadConfig, type VaultConfig } from '../config.js';
import { generateKeyPair, type KeyPairHeaders } from '../crypto/keys.js';
import { createLogger } from '../logger.js';
import { buildServer } from '../http/server.js';
import { Vault } from '../vault.js';

const PG_ADMIN_URL = process.env.VAULT_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let sharedPair: KeyPairHeaders | undefined;
/** One RSA pair per test process: generating one per test would dominate the run. */
export function testKeyPair(): KeyPairHeaders {
  sharedPair ??= generateKeyPair(2048);
  return sharedPair;
}

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw payload, sent as is (for broken JSON and odd content types). */
  payload?: string | Buffer;
  /** API key; defaults to the admin key, `null` sends none. */
  apiKey?: string | null;
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

export interface TestVault {
  vault: Vault;
  app: FastifyInstance;
  config: VaultConfig;
  adminKey: string;
  keys: KeyPairHeaders;
  /** Every log line the vault wrote, as text. */
  logs: string[];
  request<T = any>(method: string, url: string, options?: RequestOptions): Promise<Response<T>>;
  /** Creates an application and returns its API key. */
  createApplication(attributes: string[], admin?: boolean): Promise<string>;
  close(): Promise<void>;
}

export interface TestVaultOptions {
  env?: Record<string, string>;
  /** Hooks of its own a test adds to the server before any route exists (see `ServerOptions`). */
  instrument?: (app: FastifyInstance) => void;
}

/** A fresh PostgreSQL database for one test vault; dropped again by the returned function. */
export async function createPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `vault_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = PG_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
  return {
    url,
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function startTestVault(options: TestVaultOptions = {}): Promise<TestVault> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-test-'));
  const keys = testKeyPair();
  const adminKey = `admin_${randomBytes(16).toString('hex')}`;
  const indexKey = randomBytes(32).toString('base64');
  let dropDatabase: (() => Promise<void>) | undefined;
  const env: Record<string, string> = {
    VAULT_DATA_DIR: dataDir,
    VAULT_ADMIN_API_KEY: adminKey,
    VAULT_ENCRYPTION_PUBLIC_KEY: keys.publicKey,
    VAULT_INDEX_KEY: indexKey,
    VAULT_LOG_LEVEL: 'debug',
    ...options.env,
  };
  if (process.env.VAULT_TEST_DB === 'postgres' && !options.env?.VAULT_DB) {
    const database = await createPostgresDatabase();
    env.VAULT_DB = database.url;
    dropDatabase = database.drop;
  }
  const config = loadConfig(env);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger(config.logLevel, sink);
  const vault = await Vault.open({ config, logger, announce: (m) => logs.push(m) });
  const app = await buildServer(vault, { instrument: options.instrument });
  await app.ready();

  const request = async <T>(method: string, url: string, opts: RequestOptions = {}): Promise<Response<T>> => {
    const headers: Record<string, string> = { ...opts.headers };
    const apiKey = opts.apiKey === undefined ? adminKey : opts.apiKey;
    if (apiKey !== null) headers.authorization = `Bearer ${apiKey}`;
    let payload: string | Buffer | undefined = opts.payload;
    if (payload === undefined && opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject({ method: method as any, url, headers, payload, query: opts.query });
    let body: any = res.body;
    if ((res.headers['content-type'] ?? '').toString().includes('json') && res.body.length > 0) body = res.json();
    return { status: res.statusCode, body, headers: res.headers as Response['headers'] };
  };

  return {
    vault,
    app,
    config,
    adminKey,
    keys,
    logs,
    request,
    async createApplication(attributes, admin = false) {
      const res = await request('POST', '/applications', { body: { name: `app-${randomBytes(4).toString('hex')}`, attributes, admin } });
      if (res.status !== 201) throw new Error(`could not create application: ${JSON.stringify(res.body)}`);
      return (res.body as any).data.apiKey as string;
    },
    async close() {
      await app.close();
      await vault.close();
      await dropDatabase?.();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
