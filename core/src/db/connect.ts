import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: DialectName;
  /** For SQLite only: the driver handle, used by the online backup. */
  sqlite?: SqliteDatabase.Database;
}

export interface ConnectOptions {
  /** `sqlite:<path>`, `sqlite::memory:` or a `postgres://` URL. */
  url: string;
  poolSize?: number;
}

export function connect({ url, poolSize = 10 }: ConnectOptions): DatabaseHandle {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    // Counts and sequences are bigint; JavaScript numbers hold them exactly far past our scale.
    pg.types.setTypeParser(20, (v) => Number(v));
    const pool = new pg.Pool({ connectionString: url, max: poolSize });
    // An idle client losing its server must not crash the process; the next query reports it.
    pool.on('error', () => {});
    return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), dialect: 'postgres' };
  }
  if (!url.startsWith('sqlite:')) throw new Error(`VAULT_DB must be sqlite:<path> or a postgres:// URL, got "${redactUrl(url)}"`);
  const path = url.slice('sqlite:'.length);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma('journal_mode = WAL');
  // NORMAL is durable across process crashes in WAL mode; only power loss can drop the last commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // Indexes with random keys (event ids, point ids) touch pages all over the file: a 64 MiB
  // page cache keeps them in memory instead of re-reading them on every insert.
  sqlite.pragma('cache_size = -65536');
  sqlite.pragma('temp_store = memory');
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) }), dialect: 'sqlite', sqlite };
}

/** Database URLs may carry passwords; they never reach an error message or a log. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
