/**
 * Prohibitions as columns of the statement that already reads the entity or point: a read or
 * a store learns whether a rule forbids it without a statement of its own (on PostgreSQL,
 * without a round trip of its own).
 */
import { sql } from 'kysely';
import { forbidden } from '../errors.js';
import type { EventType } from './engine.js';

/** What a prohibited operation is answered with (403). */
export const PROHIBITED_MESSAGE = 'Forbidden by rule';

/** `exists(...)`: whether a rule prohibits `operation` on the entity whose id `entityRef` names (`entities.id`, `datapoints.entity_id`). */
export const prohibitedColumn = (entityRef: string, operation: EventType, alias: string) =>
  sql<unknown>`exists (select 1 from entity_prohibitions p where p.entity_id = ${sql.ref(entityRef)} and p.operation = ${operation})`.as(alias);

/** Throws the 403 when the column read back says prohibited (SQLite answers 0/1, PostgreSQL a boolean). */
export function refuseIfProhibited(column: unknown): void {
  if (truthy(column)) throw forbidden(PROHIBITED_MESSAGE);
}

export function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === '1';
}
