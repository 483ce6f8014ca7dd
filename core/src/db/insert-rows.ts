/**
 * Multi-row INSERTs from SQL text kept per shape. Every request writes rows (activity records,
 * data points, labels), and Kysely's builder spends more time turning many rows into SQL
 * than the database spends storing them.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import { THEN_COMMIT } from './connect.js';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Rows per INSERT: well under both drivers' bound-parameter limits at 20 columns. */
export const INSERT_CHUNK = 400;

const texts = new Map<string, string>();

/** The SQL text of one shape of statement, built once: building it costs more than running it. */
function cachedText(shape: string, build: () => string): string {
  let text = texts.get(shape);
  if (text === undefined) {
    text = build();
    if (texts.size >= 2000) texts.clear();
    texts.set(shape, text);
  }
  return text;
}

/** An INSERT of `rows` rows; PostgreSQL's parameters are numbered from `first`. */
function insertSql(dialect: DialectName, table: keyof Database, columns: readonly string[], rows: number, first = 1): string {
  let n = first - 1;
  const tuple = () => `(${columns.map(() => (dialect === 'postgres' ? `$${++n}` : '?')).join(', ')})`;
  return `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${Array.from({ length: rows }, tuple).join(', ')}`;
}

/** INSERTs of rows that all have the same keys, in that order. */
export async function insertRows(trx: Kysely<Database>, dialect: DialectName, table: keyof Database, rows: readonly object[]): Promise<void> {
  if (rows.length === 0) return;
  const { columns, values } = flatten(rows);
  await insertValues(trx, dialect, table, columns, values);
}

function flatten(rows: readonly object[]): { columns: string[]; values: unknown[] } {
  const columns = Object.keys(rows[0]);
  const values: unknown[] = [];
  for (const row of rows) for (const column of columns) values.push((row as Record<string, unknown>)[column]);
  return { columns, values };
}

interface BatchPart {
  table: keyof Database;
  columns: string[];
  values: unknown[];
}

/** Bound parameters one batched statement may carry (PostgreSQL allows 65,535). */
const BATCH_PARAMETERS = 30_000;

/**
 * INSERTs a transaction gathers (a store's points, their labels, its activity records) and
 * sends together before it commits. On PostgreSQL they become one statement, each INSERT a
 * data-modifying CTE (all of which run, whether or not the statement reads their results),
 * since there every statement is a round trip and socket writes were a third of a store's
 * CPU. On SQLite, where a statement costs microseconds, they run one after another.
 */
export class InsertBatch {
  private parts: BatchPart[] = [];

  constructor(private readonly dialect: DialectName) {}

  /** Rows that all have the same keys, in that order; nothing is sent before `run`. */
  add(table: keyof Database, rows: readonly object[]): void {
    if (rows.length === 0) return;
    this.parts.push({ table, ...flatten(rows) });
  }

  /**
   * `last`: these are the transaction's last statements, and the caller's answer is already
   * made; on PostgreSQL the COMMIT goes out with them (`THEN_COMMIT`), one round trip fewer.
   */
  async run(trx: Kysely<Database>, { last = false } = {}): Promise<void> {
    const parts = this.parts;
    this.parts = [];
    const parameters = parts.reduce((n, p) => n + p.values.length, 0);
    const prefix = last && this.dialect === 'postgres' ? THEN_COMMIT : '';
    if (this.dialect !== 'postgres' || parts.length < 2 || parameters > BATCH_PARAMETERS) {
      for (const [i, part] of parts.entries()) await insertValues(trx, this.dialect, part.table, part.columns, part.values, i === parts.length - 1 ? prefix : '');
      return;
    }
    const shape = `batch;${parts.map((p) => `${p.table}:${p.values.length / p.columns.length}:${p.columns.join(',')}`).join(';')}`;
    const text = cachedText(shape, () => {
      let first = 1;
      const inserts = parts.map((p) => {
        const insert = insertSql('postgres', p.table, p.columns, p.values.length / p.columns.length, first);
        first += p.values.length;
        return insert;
      });
      const last = inserts.pop()!;
      return `with ${inserts.map((insert, i) => `w${i} as (${insert})`).join(', ')} ${last}`;
    });
    await trx.executeQuery(CompiledQuery.raw(prefix + text, parts.flatMap((p) => p.values)));
  }
}

/** INSERTs of rows given as one flat list of values, `columns.length` per row. */
export async function insertValues(
  trx: Kysely<Database>,
  dialect: DialectName,
  table: keyof Database,
  columns: readonly string[],
  values: readonly unknown[],
  /** Put before the last INSERT's text. */
  lastPrefix = '',
): Promise<void> {
  const width = columns.length;
  for (let start = 0; start < values.length; start += INSERT_CHUNK * width) {
    const parameters = values.slice(start, start + INSERT_CHUNK * width);
    const rows = parameters.length / width;
    const text = cachedText(`${dialect}:${table}:${rows}:${columns.join(',')}`, () => insertSql(dialect, table, columns, rows));
    const prefix = start + INSERT_CHUNK * width >= values.length ? lastPrefix : '';
    await trx.executeQuery(CompiledQuery.raw(prefix + text, parameters));
  }
}
