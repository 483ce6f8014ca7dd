/**
 * The activity log: an append-only, hash-chained table of every read, store, update and
 * delete, whether of vaulted data (the data plane appends) or of report-only data (audit
 * events). Listing and chain verification for operators live here too.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { lockForTransaction } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { badRequest } from '../errors.js';
import type { EventType, Location } from '../rules/engine.js';
import { nowIso, parseIsoDate } from '../util/time.js';
import { chainHash, GENESIS_HASH } from './chain.js';
import type { ActivityLog, ActivityRecord } from './log.js';
import type { ActivityLogTable } from './tables.js';

/** Key of the PostgreSQL advisory lock that keeps appends, and so the chain, in one line. */
export const ACTIVITY_LOCK_KEY = 0x61637476; // "actv"

/** Rows per INSERT: well under both drivers' bound-parameter limits at 20 columns. */
const INSERT_CHUNK = 400;
const VERIFY_PAGE = 2000;

/**
 * Both databases replace what UTF-8 cannot hold (unpaired surrogates) and PostgreSQL refuses
 * NUL; doing it here first means the hash covers exactly what is stored.
 */
function storable(value: string | undefined): string | null {
  if (value === undefined) return null;
  return value.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export class ChainedActivityLog implements ActivityLog {
  async append(trx: Kysely<Database>, records: ActivityRecord[]): Promise<void> {
    if (records.length === 0) return;
    // Outside a transaction the lock would end with its own statement and two appenders
    // could chain onto the same record.
    if (!trx.isTransaction) throw new Error('activity records must be appended inside a transaction');
    await lockForTransaction(trx, ACTIVITY_LOCK_KEY);
    const last = await trx
      .selectFrom('activity_log')
      .select(['sequence', 'hash'])
      .orderBy('sequence', 'desc')
      .limit(1)
      .executeTakeFirst();
    let sequence = last ? Number(last.sequence) : 0;
    let previous = last?.hash ?? GENESIS_HASH;
    const recordedDate = nowIso();
    const rows: ActivityLogTable[] = records.map((r) => {
      sequence += 1;
      const row: Omit<ActivityLogTable, 'hash'> = {
        sequence,
        event_id: storable(r.eventId) ?? randomUUID(),
        recorded_by: storable(r.recordedBy ?? r.applicationId)!,
        event_type: r.eventType,
        subject_id: storable(r.subjectId),
        data_point_id: storable(r.dataPointId),
        attribute: storable(r.attribute),
        application_id: storable(r.applicationId)!,
        application_user: storable(r.applicationUser),
        data_store_name: storable(r.dataStoreName),
        data_store_server: storable(r.dataStoreServer),
        data_store_entity_name: storable(r.dataStoreEntityName),
        country: storable(r.location?.country),
        subdivision: storable(r.location?.subdivision),
        city: storable(r.location?.city),
        report_only: r.reportOnly ? 1 : 0,
        event_time: r.timestamp,
        recorded_date: recordedDate,
        summary: r.summary === undefined ? null : JSON.stringify(r.summary),
      };
      previous = chainHash(previous, row);
      return { ...row, hash: previous };
    });
    for (const chunk of chunks(rows, INSERT_CHUNK)) await trx.insertInto('activity_log').values(chunk).execute();
  }
}

/** What `GET /activity` returns per record: the event's fields, never a value. */
export interface ActivityEntry {
  sequence: number;
  eventId: string;
  eventType: EventType;
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  applicationId: string;
  applicationUser?: string;
  dataStoreName?: string;
  dataStoreServer?: string;
  dataStoreEntityName?: string;
  location?: Location;
  reportOnly: boolean;
  timestamp: string;
  recordedDate: string;
  recordedBy: string;
  hash: string;
}

export interface ActivityQuery {
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  eventType?: EventType;
  applicationId?: string;
  applicationUser?: string;
  from?: string;
  to?: string;
  page?: number;
  count?: number;
}

export interface VerifyResult {
  valid: boolean;
  /** Records in the log when the check started. */
  records: number;
  firstBrokenSequence?: number;
  firstBrokenEventId?: string;
  /** Hash of the last record: kept elsewhere, it also reveals records cut off the end. */
  lastHash?: string;
}

function present(value: string | null): string | undefined {
  return value === null ? undefined : value;
}

function toEntry(row: ActivityLogTable): ActivityEntry {
  const location: Location = {};
  if (row.country !== null) location.country = row.country;
  if (row.subdivision !== null) location.subdivision = row.subdivision;
  if (row.city !== null) location.city = row.city;
  return {
    sequence: Number(row.sequence),
    eventId: row.event_id,
    eventType: row.event_type as EventType,
    subjectId: present(row.subject_id),
    dataPointId: present(row.data_point_id),
    attribute: present(row.attribute),
    applicationId: row.application_id,
    applicationUser: present(row.application_user),
    dataStoreName: present(row.data_store_name),
    dataStoreServer: present(row.data_store_server),
    dataStoreEntityName: present(row.data_store_entity_name),
    location: Object.keys(location).length > 0 ? location : undefined,
    reportOnly: Number(row.report_only) === 1,
    timestamp: row.event_time,
    recordedDate: row.recorded_date,
    recordedBy: row.recorded_by,
    hash: row.hash,
  };
}

/**
 * Recomputes the whole chain in sequence order. The first record whose position, content or
 * predecessor does not match its hash is reported: an edited record fails itself, a deleted
 * one fails its successor.
 */
export async function verifyActivityChain(db: Kysely<Database>): Promise<VerifyResult> {
  const head = await db.selectFrom('activity_log').select(['sequence', 'hash']).orderBy('sequence', 'desc').limit(1).executeTakeFirst();
  if (!head) return { valid: true, records: 0 };
  const end = Number(head.sequence);
  const counted = await db
    .selectFrom('activity_log')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('sequence', '<=', end)
    .executeTakeFirstOrThrow();
  const records = Number(counted.n);
  let expected = 1;
  let previous = GENESIS_HASH;
  let after = Number.MIN_SAFE_INTEGER;
  for (;;) {
    const page = await db
      .selectFrom('activity_log')
      .selectAll()
      .where('sequence', '>', after)
      .where('sequence', '<=', end)
      .orderBy('sequence')
      .limit(VERIFY_PAGE)
      .execute();
    if (page.length === 0) break;
    for (const row of page) {
      const sequence = Number(row.sequence);
      const { hash, ...fields } = row;
      if (sequence !== expected || chainHash(previous, fields) !== hash) {
        return { valid: false, records, firstBrokenSequence: sequence, firstBrokenEventId: row.event_id };
      }
      previous = hash;
      expected += 1;
      after = sequence;
    }
  }
  return { valid: true, records, lastHash: previous };
}

export class ActivityService {
  constructor(private readonly db: Kysely<Database>) {}

  async list(query: ActivityQuery): Promise<ActivityEntry[]> {
    const from = query.from === undefined ? undefined : parseIsoDate(query.from);
    if (query.from !== undefined && from === undefined) throw badRequest('from must be an ISO 8601 date-time');
    const to = query.to === undefined ? undefined : parseIsoDate(query.to);
    if (query.to !== undefined && to === undefined) throw badRequest('to must be an ISO 8601 date-time');
    const count = query.count ?? 100;
    const page = query.page ?? 0;
    let q = this.db.selectFrom('activity_log').selectAll();
    if (query.subjectId !== undefined) q = q.where('subject_id', '=', query.subjectId);
    if (query.dataPointId !== undefined) q = q.where('data_point_id', '=', query.dataPointId);
    if (query.attribute !== undefined) q = q.where('attribute', '=', query.attribute);
    if (query.eventType !== undefined) q = q.where('event_type', '=', query.eventType);
    if (query.applicationId !== undefined) q = q.where('application_id', '=', query.applicationId);
    if (query.applicationUser !== undefined) q = q.where('application_user', '=', query.applicationUser);
    if (from !== undefined) q = q.where('event_time', '>=', from);
    if (to !== undefined) q = q.where('event_time', '<=', to);
    const rows = await q.orderBy('sequence').limit(count).offset(page * count).execute();
    return rows.map(toEntry);
  }

  verify(): Promise<VerifyResult> {
    return verifyActivityChain(this.db);
  }

  /**
   * The answers already given to these event ids of one submitting application. A record
   * without an answer (an id the data plane generated) maps to null.
   */
  static async findSummaries(trx: Kysely<Database>, recordedBy: string, eventIds: readonly string[]): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for (const chunk of chunks([...new Set(eventIds)], INSERT_CHUNK)) {
      const rows = await trx
        .selectFrom('activity_log')
        .select(['event_id', 'summary'])
        .where('recorded_by', '=', recordedBy)
        .where('event_id', 'in', chunk)
        .execute();
      for (const row of rows) out.set(row.event_id, row.summary === null ? null : JSON.parse(row.summary));
    }
    return out;
  }
}
