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
  for (const chunk of chunks(rows, INSERT_CHUNK)) {
    const shape = `${dialect}:${table}:${chunk.length}:${columns.join(',')}`;
    let text = insertTexts.get(shape);
    if (text === undefined) {
      let n = 0;
      const tuple = () => `(${columns.map(() => (dialect === 'postgres' ? `$${++n}` : '?')).join(', ')})`;
      text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${chunk.map(tuple).join(', ')}`;
      if (insertTexts.size >= 2000) insertTexts.clear();
      insertTexts.set(shape, text);
    }
    const parameters: unknown[] = [];
    for (const row of chunk) for (const column of columns) parameters.push((row as Record<string, unknown>)[column]);
    await trx.executeQuery(CompiledQuery.raw(text, parameters));
  }
}
