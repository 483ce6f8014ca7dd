/**
 * A row's list from another table (an entity's tags, a point's labels) as a JSON array in the
 * row itself: one statement where two would each cost a read transaction, or on PostgreSQL a
 * round trip.
 */
import { sql, type Kysely } from 'kysely';
import { dialectOf } from './dialect.js';
import type { Database } from './schema.js';

export interface ListSource {
  /** The table holding the list, e.g. `entity_tags`. */
  table: string;
  /** Its column whose values make the list. */
  value: string;
  /** Its column naming the owning row. */
  owner: string;
  /** The owning row's key in the enclosing query, e.g. `entities.id`. */
  ownerKey: string;
  /** Sorted by the database; otherwise in no particular order (a sort per row costs). */
  sorted?: boolean;
}

/** `(select <the values as a JSON array>)`, to be given an alias with `.as()`. */
export function jsonList(db: Kysely<Database>, { table, value, owner, ownerKey, sorted = false }: ListSource) {
  const item = sql.ref(`l.${value}`);
  const order = sorted ? sql` order by ${item}` : sql``;
  const from = sql`from ${sql.table(table)} l where ${sql.ref(`l.${owner}`)} = ${sql.ref(ownerKey)}`;
  return dialectOf(db) === 'postgres'
    ? sql<unknown>`(select coalesce(json_agg(${item}${order}), '[]'::json) ${from})`
    : sql<unknown>`(select json_group_array(${item}${order}) ${from})`;
}

/** The list as read back: SQLite answers JSON text, PostgreSQL parsed JSON. */
export function parseJsonList(value: unknown): string[] {
  return typeof value === 'string' ? (JSON.parse(value) as string[]) : ((value as string[] | null) ?? []);
}
