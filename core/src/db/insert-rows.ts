/**
 * Multi-row INSERTs from SQL text kept per shape. Every request writes rows (activity records,
 * data points, labels), and Kysely's builder spends more time turning many rows into SQL
 * than the database spends storing them.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Rows per INSERT: well under both drivers' bound-parameter limits at 20 columns. */
export const INSERT_CHUNK = 400;

const insertTexts = new Map<string, string>();

/** INSERTs of rows that all have the same keys, in that order. */
export async function insertRows(trx: Kysely<Database>, dialect: DialectName, table: keyof Database, rows: readonly object[]): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]);
  const values: unknown[] = [];
  for (const row of rows) for (const column of columns) values.push((row as Record<string, unknown>)[column]);
  await insertValues(trx, dialect, table, columns, values);
}

/** INSERTs of rows given as one flat list of values, `columns.length` per row. */
export async function insertValues(trx: Kysely<Database>, dialect: DialectName, table: keyof Database, columns: readonly string[], values: readonly unknown[]): Promise<void> {
  const width = columns.length;
  for (let start = 0; start < values.length; start += INSERT_CHUNK * width) {
    const parameters = values.slice(start, start + INSERT_CHUNK * width);
    const rows = parameters.length / width;
    const shape = `${dialect}:${table}:${rows}:${columns.join(',')}`;
    let text = insertTexts.get(shape);
    if (text === undefined) {
      let n = 0;
      const tuple = () => `(${columns.map(() => (dialect === 'postgres' ? `$${++n}` : '?')).join(', ')})`;
      text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${Array.from({ length: rows }, tuple).join(', ')}`;
      if (insertTexts.size >= 2000) insertTexts.clear();
      insertTexts.set(shape, text);
    }
    await trx.executeQuery(CompiledQuery.raw(text, parameters));
  }
}
