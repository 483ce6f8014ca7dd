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

/** A unique or primary-key violation, from either driver: the loser of a race. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**
 * A database that could not take a write: its disk is full (SQLite's SQLITE_FULL,
 * PostgreSQL's disk_full), or SQLite's write lock stayed with another process past the busy
 * timeout. The error may be the cause of the one thrown (a transaction SQLite rolled back).
 */
export function storageFailure(err: unknown): 'full' | 'busy' | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (e.code === 'SQLITE_FULL' || e.code === '53100') return 'full';
    if (typeof e.code === 'string' && e.code.startsWith('SQLITE_BUSY')) return 'busy';
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
