/**
 * Everything that differs between SQLite and PostgreSQL lives here, so migrations and
 * domain code are written once.
 */
import { sql, type ColumnDataType, type Kysely, type RawBuilder } from 'kysely';

export type DialectName = 'sqlite' | 'postgres';

/** Binary column: ciphertext and wrapped keys. Both drivers hand back a Buffer. */
export function blobType(dialect: DialectName): ColumnDataType {
  return dialect === 'postgres' ? 'bytea' : 'blob';
}

/** An auto-incrementing integer primary key (activity log sequence and similar). */
export function serialType(dialect: DialectName): RawBuilder<unknown> {
  return dialect === 'postgres' ? sql`bigserial` : sql`integer`;
}

/** Counts come back as strings from pg (bigint) and numbers from SQLite. */
export function toNumber(value: unknown): number {
  return typeof value === 'number' ? value : Number(value ?? 0);
}

/** Case-insensitive LIKE on both dialects. */
export function ilike(dialect: DialectName): 'ilike' | 'like' {
  return dialect === 'postgres' ? 'ilike' : 'like';
}

/**
 * `column` is one of a list of text ids bound as one parameter (`idList`), so a statement
 * has one text for any number of ids and is prepared once: `= any(array)` on PostgreSQL,
 * `in json_each(...)` on SQLite, both looked up through the column's index.
 */
export function inIdList(db: Kysely<any>, column: string, parameter: unknown): RawBuilder<boolean> {
  return dialectOf(db) === 'postgres'
    ? sql<boolean>`${sql.ref(column)} = any(${parameter}::text[])`
    : sql<boolean>`${sql.ref(column)} in (select value from json_each(${parameter}))`;
}

/** The parameter `inIdList` reads: an array for pg to send as one, JSON text for SQLite. */
export function idList(db: Kysely<any>, ids: readonly string[]): unknown {
  return dialectOf(db) === 'postgres' ? ids : JSON.stringify(ids);
}

export function dialectOf(db: Kysely<any>): DialectName {
  const name = db.getExecutor().adapter.constructor.name;
  return name.toLowerCase().includes('postgres') ? 'postgres' : 'sqlite';
}

/**
 * The query with FOR UPDATE on PostgreSQL, where rows must be held against other connections'
 * writes until the transaction ends; SQLite has no FOR UPDATE, and its write transactions run
 * one at a time anyway.
 */
export function forUpdateOnPostgres<Q extends { forUpdate(): Q }>(dialect: DialectName, query: Q): Q {
  return dialect === 'postgres' ? query.forUpdate() : query;
}

/** A unique or primary-key violation, from either driver: the loser of a race. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**
 * PostgreSQL failed the transaction to end a deadlock (40P01) or a serialization conflict
 * (40001): it was rolled back whole, and running it again is what the server asks for.
 */
export function isSerializationFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === '40P01' || code === '40001';
}

/** Socket errors of a connection that could not be made or was lost. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * pg's own errors for a lost connection carry no code, only these messages: the connection
 * dropped, or none made within the connect timeout. (A statement unanswered past the
 * statement timeout fails with ETIMEDOUT: connect.ts.)
 */
const LOST_CONNECTION = /^(Connection terminated|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect)/;

/**
 * A database that could not take a request: its disk is full (SQLite's SQLITE_FULL,
 * PostgreSQL's disk_full), SQLite's write lock stayed with another process past the busy
 * timeout, or PostgreSQL could not be reached or stopped answering (SQLSTATE class 08, a
 * server shutting down or starting: 57P01-57P03, too many connections: 53300), or took no
 * writes (25006: a standby, as during a failover). A transaction PostgreSQL failed to end a
 * deadlock or a serialization conflict (40P01, 40001) that running it again did not settle
 * (`committed`), or that ran without that helper, is busy too: the client may send it again.
 * The error may be the cause of the one thrown (a transaction SQLite rolled back).
 */
export function storageFailure(err: unknown): 'full' | 'busy' | 'unreachable' | undefined {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (code === 'SQLITE_FULL' || code === '53100') return 'full';
    if (code.startsWith('SQLITE_BUSY') || code === '40P01' || code === '40001') return 'busy';
    if (NETWORK_CODES.has(code) || code.startsWith('08') || /^57P0[123]$/.test(code) || code === '53300' || code === '25006') return 'unreachable';
    if (code === '' && typeof e.message === 'string' && LOST_CONNECTION.test(e.message)) return 'unreachable';
  }
  return undefined;
}

/**
 * Serialises the transactions that take the same key until each ends. PostgreSQL needs an
 * advisory lock for that; SQLite transactions already run one at a time.
 */
export async function lockForTransaction(trx: Kysely<any>, key: number): Promise<void> {
  if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(${key}::bigint)`.execute(trx);
}
