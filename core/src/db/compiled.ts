/**
 * Queries built and compiled once, then run with fresh values. For a point lookup Kysely's
 * builder and compiler cost more than the database does; the SQL of a fixed-shape query never
 * changes, only its values, so the compiled form is kept and its values swapped.
 */
import { CompiledQuery, type Compilable, type Kysely } from 'kysely';
import type { Database } from './schema.js';

const sentinel = (i: number) => `\u0000compiled-parameter-${i}\u0000`;

/**
 * `build` receives one placeholder per argument and must use each exactly once as a value;
 * the result runs on any executor (a database or a transaction) of either dialect.
 */
export function compiledQuery<Args extends unknown[], Row>(
  arity: Args['length'],
  build: (db: Kysely<Database>, ...placeholders: string[]) => Compilable<Row>,
): (executor: Kysely<Database>, ...args: Args) => Promise<Row[]> {
  const byAdapter = new Map<unknown, { query: CompiledQuery<Row>; positions: number[] }>();
  return async (executor, ...args) => {
    const adapter = executor.getExecutor().adapter.constructor;
    let entry = byAdapter.get(adapter);
    if (!entry) {
      const placeholders = Array.from({ length: arity }, (_, i) => sentinel(i));
      const query = build(executor, ...placeholders).compile();
      const positions = placeholders.map((p) => query.parameters.indexOf(p));
      if (positions.some((p) => p < 0)) throw new Error('every placeholder of a compiled query must be bound once');
      entry = { query, positions };
      byAdapter.set(adapter, entry);
    }
    const parameters = [...entry.query.parameters];
    entry.positions.forEach((position, i) => (parameters[position] = args[i]));
    const result = await executor.executeQuery<Row>({ ...entry.query, parameters } as CompiledQuery<Row>);
    return result.rows;
  };
}
