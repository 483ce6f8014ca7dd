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

  async run(trx: Kysely<Database>): Promise<void> {
    const parts = this.parts;
    this.parts = [];
    const parameters = parts.reduce((n, p) => n + p.values.length, 0);
    if (this.dialect !== 'postgres' || parts.length < 2 || parameters > BATCH_PARAMETERS) {
      for (const part of parts) await insertValues(trx, this.dialect, part.table, part.columns, part.values);
      return;
    }
    const shape = parts.map((p) => `${p.table}:${p.values.length / p.columns.length}:${p.columns.join(',')}`).join(';');
    let text = batchTexts.get(shape);
    if (text === undefined) {
      let n = 0;
      const insert = (p: BatchPart) => {
        const tuple = () => `(${p.columns.map(() => `$${++n}`).join(', ')})`;
        const rows = Array.from({ length: p.values.length / p.columns.length }, tuple).join(', ');
        return `insert into "${p.table}" (${p.columns.map((c) => `"${c}"`).join(', ')}) values ${rows}`;
      };
      const ctes = parts.slice(0, -1).map((p, i) => `w${i} as (${insert(p)})`);
      text = `with ${ctes.join(', ')} ${insert(parts[parts.length - 1])}`;
      if (batchTexts.size >= 2000) batchTexts.clear();
      batchTexts.set(shape, text);
    }
    await trx.executeQuery(CompiledQuery.raw(text, parts.flatMap((p) => p.values)));
  }
}

const batchTexts = new Map<string, string>();

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
