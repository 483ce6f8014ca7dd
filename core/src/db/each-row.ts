/**
 * An INSERT of many rows that SQLite's writer runs as a one-row statement once per row.
 *
 * A multi-row INSERT makes SQLite keep a statement journal (a copy of every page the statement
 * changes, so it can undo itself alone should a later row fail), and binds its hundreds of
 * parameters in one go: on the benchmark's machine 64 activity records cost 13 µs each that
 * way and 5 µs each as 64 runs of one prepared one-row statement. A write that fails stops at
 * its first failing row, with the rows before it still in the transaction; the vault never
 * goes on after a failed write without rolling back (its transaction, or the savepoint of its
 * write in a shared transaction), so that undoes them as the statement journal did.
 */
import type { CompiledQuery } from 'kysely';

export interface EachRowInsert extends CompiledQuery {
  /** Values per row: `parameters` holds the rows one after another. */
  readonly rowWidth: number;
}

export function eachRowInsert(query: CompiledQuery, rowWidth: number): EachRowInsert {
  return { ...query, rowWidth };
}

export function isEachRowInsert(query: CompiledQuery): query is EachRowInsert {
  return typeof (query as Partial<EachRowInsert>).rowWidth === 'number';
}
