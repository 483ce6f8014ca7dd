/**
 * The hash chain: each record's hash covers the previous record's hash and a canonical
 * serialisation of every column but the hash itself, so editing, deleting or reordering a
 * record breaks the chain at that point.
 */
import { hash } from 'node:crypto';
import type { ActivityLogTable } from './tables.js';

/** The last sealed record, kept outside the database to detect records cut off the end. */
export interface ChainHead {
  sequence: number;
  hash: string;
}

/** The "previous hash" of the first record. */
export const GENESIS_HASH = '0'.repeat(64);

/** The log's columns in chain order: what a sealed row is inserted with. */
export const CHAINED_COLUMNS = [
  'sequence',
  'event_id',
  'recorded_by',
  'event_type',
  'subject_id',
  'data_point_id',
  'attribute',
  'application_id',
  'application_user',
  'data_store_name',
  'data_store_server',
  'data_store_entity_name',
  'country',
  'subdivision',
  'city',
  'report_only',
  'event_time',
  'recorded_date',
  'summary',
  'points',
  'change',
  'hash',
] as const;

type Unchained = Omit<ActivityLogTable, 'sequence' | 'hash'>;

/**
 * A JSON array in a fixed column order: no key ordering to agree on, and every value is a
 * string, an integer or null, which JSON spells one way only. A record naming several points
 * (`v2`) adds their list, as stored; an administrative change (`v3`) adds that list (or null)
 * and the change, as stored. Every other record keeps the form it was chained with before
 * those columns existed (`v1`), so logs written then still verify.
 */
function canonicalArray(sequence: number, row: Unchained): unknown[] {
  const changed = row.change !== null && row.change !== undefined;
  const listed = row.points !== null && row.points !== undefined;
  const fields = [
    changed ? 'v3' : listed ? 'v2' : 'v1',
    sequence,
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
  ];
  if (changed) fields.push(listed ? row.points : null, row.change);
  else if (listed) fields.push(row.points);
  return fields;
}

export function canonicalFields(row: Omit<ActivityLogTable, 'hash'>): string {
  return JSON.stringify(canonicalArray(Number(row.sequence), row));
}

function link(previousHash: string, canonical: string): string {
  // One-shot: a Hash object per record cost more than hashing a record's few hundred bytes.
  return hash('sha256', `${previousHash}\n${canonical}`, 'hex');
}

export function chainHash(previousHash: string, row: Omit<ActivityLogTable, 'hash'>): string {
  return link(previousHash, canonicalFields(row));
}

/**
 * Chains records onto a head: their values in `CHAINED_COLUMNS` order, one flat list ready to
 * insert, and the new head. The same hashes as `chainHash`, without an object per row: a
 * bulk audit chains a thousand records.
 */
export function chainRecords(head: ChainHead, records: readonly Unchained[]): { values: unknown[]; head: ChainHead } {
  const values: unknown[] = [];
  let { sequence, hash: previous } = head;
  for (const record of records) {
    sequence += 1;
    const fields = canonicalArray(sequence, record);
    previous = link(previous, JSON.stringify(fields));
    for (let i = 1; i < fields.length; i++) values.push(fields[i]);
    // `points` and `change`, which the older forms leave out.
    if (fields[0] === 'v1') values.push(null, null);
    else if (fields[0] === 'v2') values.push(null);
    values.push(previous);
  }
  return { values, head: { sequence, hash: previous } };
}
