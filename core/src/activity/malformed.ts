/**
 * Records whose JSON columns (`points`, `change`) an insider overwrote with something the vault
 * never writes. Verification reports such a record; listing must still show it and the records
 * around it, or the tampering would hide the log from the auditor who looks into it.
 */
import { sql, type RawBuilder } from 'kysely';
import type { DialectName } from '../db/dialect.js';
import type { Change } from './changes.js';

/** A JSON string without escapes or control characters, or null: what a point's id and attribute are written as. */
const ITEM = '("[^"\\\\[:cntrl:]]*"|null)';
const PAIR = `\\[${ITEM}(,${ITEM})*\\]`;
/**
 * `points` as the vault writes them, ids and attributes without escapes. PostgreSQL 15 has no
 * test for valid JSON without casting (and a failed cast fails the query): a list matching this
 * casts, anything else is listed as the record alone.
 */
const POINTS_AS_WRITTEN = `^\\[(${PAIR}(,${PAIR})*)?\\]$`;

/**
 * The `points` to expand into entries: all of them normally; when listing a log one of whose
 * records holds what is not a JSON list there (`tolerant`), only those that are.
 */
export function pointsList(dialect: DialectName, tolerant: boolean): RawBuilder<unknown> {
  if (!tolerant) {
    // A JSON object would otherwise list its keys as points on SQLite, as PostgreSQL refuses to.
    return dialect === 'postgres' ? sql`r.points::jsonb` : sql`(case when json_type(r.points) = 'array' then r.points end)`;
  }
  return dialect === 'postgres'
    ? sql`(case when r.points ~ ${POINTS_AS_WRITTEN} then r.points::jsonb end)`
    : // CASE evaluates lazily: json_type would fail on what json_valid refuses.
      sql`(case when json_valid(r.points) then case when json_type(r.points) = 'array' then r.points end end)`;
}

/** Whether a query failed on a `points` value that is not a JSON list. */
export function isMalformedJson(error: unknown): boolean {
  const { message, code } = error as { message?: unknown; code?: unknown };
  // PostgreSQL: invalid input syntax for type json; cannot extract elements from an object or scalar.
  if (code === '22P02' || code === '22023') return true;
  return typeof message === 'string' && /malformed JSON/i.test(message);
}

/** A `CHANGE` record's change, or undefined when the column holds no JSON object. */
export function parseChange(text: string | null): Change | undefined {
  if (text === null) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Change) : undefined;
  } catch {
    return undefined;
  }
}
