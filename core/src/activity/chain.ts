/**
 * The hash chain: each record's hash covers the previous record's hash and a canonical
 * serialisation of every column but the hash itself, so editing, deleting or reordering a
 * record breaks the chain at that point.
 */
import { hash } from 'node:crypto';
import type { ActivityLogTable } from './tables.js';

/** The "previous hash" of the first record. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * A JSON array in a fixed column order: no key ordering to agree on, and every value is a
 * string, an integer or null, which JSON spells one way only.
 */
export function canonicalFields(row: Omit<ActivityLogTable, 'hash'>): string {
  return JSON.stringify([
    'v1',
    Number(row.sequence),
    row.event_id,
    row.recorded_by,
    row.event_type,
    row.subject_id,
    row.data_point_id,
    row.attribute,
    row.application_id,
    row.application_user,
    row.data_store_name,
    row.data_store_server,
    row.data_store_entity_name,
    row.country,
    row.subdivision,
    row.city,
    Number(row.report_only),
    row.event_time,
    row.recorded_date,
    row.summary,
  ]);
}

export function chainHash(previousHash: string, row: Omit<ActivityLogTable, 'hash'>): string {
  // One-shot: a Hash object per record cost more than hashing a record's few hundred bytes.
  return hash('sha256', `${previousHash}\n${canonicalFields(row)}`, 'hex');
}
