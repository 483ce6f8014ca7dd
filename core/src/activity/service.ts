/**
 * Reading the activity log: listing with filters, and verifying the hash chain (`verify.ts`). Records are
 * written by the appender (`appender.ts`) and chained by the sealer (`sealer.ts`); a record
 * committed but not yet sealed is listed after every sealed one, without a `sequence`. The
 * list is of entries: one per record, but one per point for a read that answered several
 * points, which is one record (`entriesOf`).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { dialectOf, type DialectName } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { badRequest } from '../errors.js';
import type { Location } from '../rules/engine.js';
import { parseIsoDate } from '../util/time.js';
import type { ChainHead } from './chain.js';
import { chunks, INSERT_CHUNK } from '../db/insert-rows.js';
import { chainHead, type ActivitySealer } from './sealer.js';
import type { EventOrigin, RecordType } from './log.js';
import type { Change } from './changes.js';
import { isMalformedJson, parseChange, pointsList } from './malformed.js';
import type { ActivityLogTable } from './tables.js';
import { verifyActivityChain, type VerifyResult } from './verify.js';

/** What `GET /activity` returns per record: the event's fields, never a value. */
export interface ActivityEntry extends EventOrigin {
  /**
   * Position of the record in the hash chain; absent until it is sealed (within a second or
   * so). The entries of a record that names several points share it.
   */
  sequence?: number;
  /** The record's id; for an entry of a record that names several points, `<record id>.<part>`. */
  eventId: string;
  /** For a read answered with several points, one record: this entry's place in it, from 1. */
  part?: number;
  eventType: RecordType;
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  reportOnly: boolean;
  timestamp: string;
  recordedDate: string;
  recordedBy: string;
  sealed: boolean;
  /** Absent until sealed. */
  hash?: string;
  /** For a `CHANGE` record: what was changed. */
  change?: Change;
}

export interface ActivityQuery {
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  eventType?: RecordType;
  applicationId?: string;
  applicationUser?: string;
  from?: string;
  to?: string;
  /** Sealed records from this sequence on; unsealed ones have none and are left out. */
  fromSequence?: number;
  toSequence?: number;
  /** `oldest` (the default) or `newest`: the same entries in exactly the reverse order. */
  order?: ActivityOrder;
  page?: number;
  count?: number;
}

export type ActivityOrder = 'oldest' | 'newest';

export type { ChainHead } from './chain.js';
export { parseChainHead, verifyActivityChain, type VerifyResult } from './verify.js';

function present(value: string | null): string | undefined {
  return value === null ? undefined : value;
}

type AnyRecordRow = Omit<ActivityLogTable, 'sequence' | 'hash'> & { sequence?: number | null; hash?: string | null };

/** A record's row with the point one of its entries names (`entryPage`). */
type EntryRow = AnyRecordRow & { entry_point: string | null; entry_attribute: string | null; entry_part: number | string | null };

/** An entry of a record (`entryPage`): the record's fields, and the point its part names. */
function toEntry(row: EntryRow): ActivityEntry {
  const location: Location = {};
  if (row.country !== null) location.country = row.country;
  if (row.subdivision !== null) location.subdivision = row.subdivision;
  if (row.city !== null) location.city = row.city;
  const sealed = row.hash !== undefined && row.hash !== null;
  const part = row.entry_part === null ? undefined : Number(row.entry_part);
  return {
    sequence: sealed ? Number(row.sequence) : undefined,
    eventId: part === undefined ? row.event_id : `${row.event_id}.${part}`,
    part,
    eventType: row.event_type as RecordType,
    subjectId: present(row.subject_id),
    dataPointId: present(row.entry_point),
    attribute: present(row.entry_attribute),
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
    sealed,
    hash: sealed ? row.hash! : undefined,
    change: parseChange(row.change),
  };
}

type Filterable = 'activity_log' | 'activity_pending';

/** The literal the partial point index is declared with: a bound parameter would not match it. */
const NOT_READ = sql<boolean>`event_type <> 'READ'`;

/**
 * Every subject a point ever belonged to. READ records are not in the point index (migration
 * 0007), so a point's records are looked for among its subjects' records: the subject it has
 * now, and those its STORE, UPDATE and DELETE records name (an id reused after a deletion can
 * have had another).
 */
async function subjectsOfPoint(db: Kysely<Database>, dataPointId: string): Promise<string[]> {
  const subjects = new Set<string>();
  const current = await db.selectFrom('datapoints').select('entity_id').where('id', '=', dataPointId).executeTakeFirst();
  if (current) subjects.add(current.entity_id);
  for (const table of ['activity_log', 'activity_pending'] as const) {
    const rows = await db.selectFrom(table).select('subject_id').distinct().where('data_point_id', '=', dataPointId).where(NOT_READ).execute();
    for (const row of rows) if (row.subject_id !== null) subjects.add(row.subject_id);
  }
  return [...subjects];
}

/**
 * A table's records as entries: a record that names several points (`points`, migration 0008)
 * gives one entry per point, in the order the read answered them, numbered from 1 by `part`;
 * any other record gives one entry with a null `part`. `r` is the record, and `point` and
 * `attribute` are the entry's own.
 */
function entriesOf(dialect: DialectName, table: Filterable, tolerant = false) {
  const points = pointsList(dialect, tolerant);
  return dialect === 'postgres'
    ? {
        from: sql`${sql.table(table)} r left join lateral jsonb_array_elements(${points}) with ordinality as e(point, part) on true`,
        point: sql<string | null>`coalesce(e.point->>0, r.data_point_id)`,
        attribute: sql<string | null>`coalesce(e.point->>1, r.attribute)`,
        part: sql<number | string | null>`e.part`,
      }
    : {
        from: sql`${sql.table(table)} r left join json_each(${points}) e`,
        point: sql<string | null>`coalesce(e.value->>0, r.data_point_id)`,
        attribute: sql<string | null>`coalesce(e.value->>1, r.attribute)`,
        part: sql<number | string | null>`e.key + 1`,
      };
}

/** Whether a record names the point, by itself or in its list: for a query on either table, without an alias. */
function namesPoint(dialect: DialectName, dataPointId: string): RawBuilder<boolean> {
  const listed =
    dialect === 'postgres'
      ? sql`exists (select 1 from jsonb_array_elements(points::jsonb) e where e->>0 = ${dataPointId})`
      : sql`exists (select 1 from json_each(points) e where e.value->>0 = ${dataPointId})`;
  return sql<boolean>`(data_point_id = ${dataPointId} or (points is not null and ${listed}))`;
}

/** `tolerant`: the log holds a record whose `points` is not a JSON list (`malformed.ts`). */
export type ActivityFilter = ActivityQuery & { subjectsOfPoint?: string[]; tolerant?: boolean };

/** The filters of `GET /activity`, on the entries of either table (`entriesOf`). */
function entryConditions(dialect: DialectName, table: Filterable, filter: ActivityFilter, from: string | undefined, to: string | undefined): RawBuilder<unknown> {
  const entry = entriesOf(dialect, table, filter.tolerant);
  const where: RawBuilder<unknown>[] = [];
  const bySubject = filter.subjectId !== undefined || filter.subjectsOfPoint !== undefined;
  if (filter.subjectId !== undefined) where.push(sql`r.subject_id = ${filter.subjectId}`);
  // Every record of a point names the point's subject: the subject index narrows to them.
  if (filter.subjectsOfPoint !== undefined) where.push(sql`r.subject_id in (${sql.join(filter.subjectsOfPoint)})`);
  if (filter.dataPointId !== undefined) where.push(sql`${entry.point} = ${filter.dataPointId}`);
  if (filter.attribute !== undefined) where.push(sql`${entry.attribute} = ${filter.attribute}`);
  if (filter.eventType !== undefined) where.push(sql`r.event_type = ${filter.eventType}`);
  if (filter.applicationId !== undefined) {
    // SQLite keeps no statistics, so with a subject and an application it took the
    // application's index: every record the application ever made, to find one subject's.
    // A unary + keeps a column's index out of the choice; PostgreSQL's planner has statistics.
    where.push(bySubject && dialect === 'sqlite' ? sql`+r.application_id = ${filter.applicationId}` : sql`r.application_id = ${filter.applicationId}`);
  }
  if (filter.applicationUser !== undefined) where.push(sql`r.application_user = ${filter.applicationUser}`);
  if (from !== undefined) where.push(sql`r.event_time >= ${from}`);
  if (to !== undefined) where.push(sql`r.event_time <= ${to}`);
  if (filter.fromSequence !== undefined || filter.toSequence !== undefined) {
    if (table === 'activity_pending') where.push(sql`1 = 0`);
    else {
      if (filter.fromSequence !== undefined) where.push(sql`r.sequence >= ${filter.fromSequence}`);
      if (filter.toSequence !== undefined) where.push(sql`r.sequence <= ${filter.toSequence}`);
    }
  }
  return where.length === 0 ? sql`` : sql`where ${sql.join(where, sql` and `)}`;
}

/** One page of a table's entries that pass the filters, in the order they were recorded or its reverse. */
export function entryPage(
  dialect: DialectName,
  table: Filterable,
  filter: ActivityFilter,
  from: string | undefined,
  to: string | undefined,
  limit: number,
  offset: number,
  order: ActivityOrder = 'oldest',
) {
  const entry = entriesOf(dialect, table, filter.tolerant);
  const record = table === 'activity_log' ? sql`r.sequence` : sql`r.id`;
  const by = order === 'newest' ? sql`${record} desc, entry_part desc` : sql`${record}, entry_part`;
  return sql<EntryRow>`select r.*, ${entry.point} as entry_point, ${entry.attribute} as entry_attribute, ${entry.part} as entry_part
    from ${entry.from} ${entryConditions(dialect, table, filter, from, to)}
    order by ${by} limit ${limit} offset ${offset}`;
}

function countEntries(dialect: DialectName, table: Filterable, filter: ActivityFilter, from: string | undefined, to: string | undefined) {
  return sql<{ n: number | string }>`select count(*) as n from ${entriesOf(dialect, table, filter.tolerant).from} ${entryConditions(dialect, table, filter, from, to)}`;
}

export class ActivityService {
  constructor(
    private readonly db: Kysely<Database>,
    /** Verification first seals what is committed, so its answer covers it. */
    private readonly sealer?: ActivitySealer,
  ) {}

  /**
   * Sealed entries by sequence, then the unsealed ones in the order they were recorded; the
   * entries of a record that names several points follow each other, by `part`. Newest first
   * is exactly the reverse: unsealed entries, then sealed ones from the highest sequence.
   */
  async list(query: ActivityQuery): Promise<ActivityEntry[]> {
    try {
      return await this.listEntries(query, false);
    } catch (error) {
      // Only a log tampered with holds such a record: the normal query stays free of the check.
      if (!isMalformedJson(error)) throw error;
      return this.listEntries(query, true);
    }
  }

  private async listEntries(query: ActivityQuery, tolerant: boolean): Promise<ActivityEntry[]> {
    const from = query.from === undefined ? undefined : parseIsoDate(query.from);
    if (query.from !== undefined && from === undefined) throw badRequest('from must be an ISO 8601 date-time');
    const to = query.to === undefined ? undefined : parseIsoDate(query.to);
    if (query.to !== undefined && to === undefined) throw badRequest('to must be an ISO 8601 date-time');
    const count = query.count ?? 100;
    const offset = (query.page ?? 0) * count;
    const dialect = dialectOf(this.db);
    // One snapshot for both tables: the sealer moving records between them mid-listing would
    // otherwise drop them from the page (read before they were sealed, looked for after).
    const snapshot = dialect === 'postgres' ? this.db.transaction().setIsolationLevel('repeatable read') : this.db.transaction();
    return snapshot.execute(async (db) => {
      let filter: ActivityFilter = { ...query, tolerant };
      if (query.dataPointId !== undefined && query.subjectId === undefined) {
        const subjects = await subjectsOfPoint(db, query.dataPointId);
        if (subjects.length === 0) return [];
        filter = { ...filter, subjectsOfPoint: subjects };
      }
      const order = query.order ?? 'oldest';
      const [first, then]: Filterable[] = order === 'newest' ? ['activity_pending', 'activity_log'] : ['activity_log', 'activity_pending'];
      const head = (await entryPage(dialect, first, filter, from, to, count, offset, order).execute(db)).rows;
      if (head.length === count) return head.map(toEntry);
      // The page reaches past the first table's entries: how far past decides where the second's start.
      let skip = 0;
      if (head.length === 0 && offset > 0) {
        const [total] = (await countEntries(dialect, first, filter, from, to).execute(db)).rows;
        skip = Math.max(0, offset - Number(total.n));
      }
      const tail = (await entryPage(dialect, then, filter, from, to, count - head.length, skip, order).execute(db)).rows;
      return [...head, ...tail].map(toEntry);
    });
  }

  async verify(expectedHead?: ChainHead): Promise<VerifyResult> {
    await this.sealer?.sealAll(2000);
    return verifyActivityChain(this.db, expectedHead);
  }

  async head(): Promise<ChainHead> {
    await this.sealer?.sealAll(2000);
    return chainHead(this.db);
  }

  /**
   * The answers already given to these event ids of one submitting application. A record
   * without an answer maps to null.
   */
  static async findSummaries(trx: Kysely<Database>, recordedBy: string, eventIds: readonly string[]): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for (const chunk of chunks([...new Set(eventIds)], INSERT_CHUNK)) {
      const rows = await trx
        .selectFrom('activity_event_ids')
        .select(['event_id', 'summary'])
        .where('recorded_by', '=', recordedBy)
        .where('event_id', 'in', chunk)
        .execute();
      for (const row of rows) out.set(row.event_id, row.summary === null ? null : JSON.parse(row.summary));
    }
    return out;
  }

  /** When a point of the subject was last read, sealed or not (ISO 8601), or undefined. */
  static async lastRead(trx: Kysely<Database>, subjectId: string, dataPointId: string): Promise<string | undefined> {
    let last: string | undefined;
    // Pending first: records only ever move from there to the log, so one the sealer moves
    // between the two queries is still seen once.
    for (const table of ['activity_pending', 'activity_log'] as const) {
      const row = await trx
        .selectFrom(table)
        .select((eb) => eb.fn.max('event_time').as('last'))
        // Through the subject index: READ records are not in the point index.
        .where('subject_id', '=', subjectId)
        .where('event_type', '=', 'READ')
        .where(namesPoint(dialectOf(trx), dataPointId))
        .executeTakeFirst();
      const value = typeof row?.last === 'string' ? row.last : undefined;
      if (value !== undefined && (last === undefined || value > last)) last = value;
    }
    return last;
  }
}
