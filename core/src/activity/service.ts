/**
 * Reading the activity log: listing with filters, and verifying the hash chain. Records are
 * written by the appender (`appender.ts`) and chained by the sealer (`sealer.ts`); a record
 * committed but not yet sealed is listed after every sealed one, without a `sequence`.
 */
import { PostgresAdapter, sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { badRequest } from '../errors.js';
import type { EventType, Location } from '../rules/engine.js';
import { parseIsoDate } from '../util/time.js';
import { chainHash, GENESIS_HASH, type ChainHead } from './chain.js';
import { chunks, INSERT_CHUNK } from '../db/insert-rows.js';
import { chainHead, type ActivitySealer } from './sealer.js';
import type { EventOrigin } from './log.js';
import type { ActivityLogTable, ActivityPendingTable } from './tables.js';

const VERIFY_PAGE = 2000;

/** What `GET /activity` returns per record: the event's fields, never a value. */
export interface ActivityEntry extends EventOrigin {
  /** Position in the hash chain; absent until the record is sealed (within a second or so). */
  sequence?: number;
  eventId: string;
  eventType: EventType;
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

export type { ChainHead } from './chain.js';

export interface VerifyResult {
  valid: boolean;
  /** Sealed records in the log when the check started. */
  records: number;
  /** Committed records not yet chained (they are sealed within about a second). */
  unsealed: number;
  firstBrokenSequence?: number;
  firstBrokenEventId?: string;
  /** Hash of the last record: kept elsewhere, it also reveals records cut off the end. */
  lastHash?: string;
  lastSequence?: number;
  /** With an expected head: whether the log still holds that record unchanged. */
  headMatches?: boolean;
}

function present(value: string | null): string | undefined {
  return value === null ? undefined : value;
}

type AnyRecordRow = Omit<ActivityLogTable, 'sequence' | 'hash'> & { sequence?: number | null; hash?: string | null };

function toEntry(row: AnyRecordRow): ActivityEntry {
  const location: Location = {};
  if (row.country !== null) location.country = row.country;
  if (row.subdivision !== null) location.subdivision = row.subdivision;
  if (row.city !== null) location.city = row.city;
  const sealed = row.hash !== undefined && row.hash !== null;
  return {
    sequence: sealed ? Number(row.sequence) : undefined,
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
    sealed,
    hash: sealed ? row.hash! : undefined,
  };
}

/**
 * Recomputes the whole chain in sequence order. The first record whose position, content or
 * predecessor does not match its hash is reported: an edited record fails itself, a deleted
 * one fails its successor, reordered ones fail where the order breaks. Given the head an
 * operator kept elsewhere, a log cut short (or rewritten from some point on) is caught too.
 */
export async function verifyActivityChain(db: Kysely<Database>, expectedHead?: ChainHead): Promise<VerifyResult> {
  const pending = await db.selectFrom('activity_pending').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  const unsealed = Number(pending.n);
  const head = await db.selectFrom('activity_log').select(['sequence', 'hash']).orderBy('sequence', 'desc').limit(1).executeTakeFirst();
  const end = head ? Number(head.sequence) : 0;
  const counted = await db
    .selectFrom('activity_log')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('sequence', '<=', end)
    .executeTakeFirstOrThrow();
  const records = Number(counted.n);
  let expected = 1;
  let previous = GENESIS_HASH;
  let after = Number.MIN_SAFE_INTEGER;
  let headMatches: boolean | undefined = expectedHead ? expectedHead.sequence === 0 && expectedHead.hash === GENESIS_HASH : undefined;
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
        return { valid: false, records, unsealed, firstBrokenSequence: sequence, firstBrokenEventId: row.event_id, headMatches };
      }
      if (expectedHead && sequence === expectedHead.sequence) headMatches = hash === expectedHead.hash;
      previous = hash;
      expected += 1;
      after = sequence;
    }
  }
  const result: VerifyResult = { valid: true, records, unsealed };
  if (end > 0) {
    result.lastHash = previous;
    result.lastSequence = end;
  }
  if (expectedHead) {
    result.headMatches = headMatches ?? false;
    if (!result.headMatches) result.valid = false;
  }
  return result;
}

/** `<sequence>:<hash>`, as `vault activity head` prints it. */
export function parseChainHead(text: string): ChainHead | undefined {
  const match = /^(\d{1,15}):([0-9a-f]{64})$/.exec(text.trim());
  return match ? { sequence: Number(match[1]), hash: match[2] } : undefined;
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

/** The filters of `GET /activity` on either table, for a query run through `db`. */
export function filtered<T extends Filterable>(
  db: Kysely<Database>,
  query: SelectQueryBuilder<Database, T, ActivityLogTable | ActivityPendingTable>,
  filter: ActivityQuery & { subjectsOfPoint?: string[] },
  from: string | undefined,
  to: string | undefined,
) {
  // Both tables share these columns; the builder cannot see that through the union of types.
  let q = query as unknown as SelectQueryBuilder<Database, 'activity_log', ActivityLogTable>;
  const bySubject = filter.subjectId !== undefined || filter.subjectsOfPoint !== undefined;
  if (filter.subjectId !== undefined) q = q.where('subject_id', '=', filter.subjectId);
  // Every record of a point names the point's subject: the subject index narrows to them.
  if (filter.subjectsOfPoint !== undefined) q = q.where('subject_id', 'in', filter.subjectsOfPoint);
  if (filter.dataPointId !== undefined) q = q.where('data_point_id', '=', filter.dataPointId);
  if (filter.attribute !== undefined) q = q.where('attribute', '=', filter.attribute);
  if (filter.eventType !== undefined) q = q.where('event_type', '=', filter.eventType);
  if (filter.applicationId !== undefined) {
    // SQLite keeps no statistics, so with a subject and an application it took the
    // application's index: every record the application ever made, to find one subject's.
    // A unary + keeps a column's index out of the choice; PostgreSQL's planner has statistics.
    const column = bySubject && dialectOf(db) === 'sqlite' ? sql<string>`+application_id` : sql.ref<string>('application_id');
    q = q.where(column, '=', filter.applicationId);
  }
  if (filter.applicationUser !== undefined) q = q.where('application_user', '=', filter.applicationUser);
  if (from !== undefined) q = q.where('event_time', '>=', from);
  if (to !== undefined) q = q.where('event_time', '<=', to);
  return q;
}

export class ActivityService {
  constructor(
    private readonly db: Kysely<Database>,
    /** Verification first seals what is committed, so its answer covers it. */
    private readonly sealer?: ActivitySealer,
  ) {}

  /** Sealed records by sequence, then the unsealed ones in the order they were recorded. */
  async list(query: ActivityQuery): Promise<ActivityEntry[]> {
    const from = query.from === undefined ? undefined : parseIsoDate(query.from);
    if (query.from !== undefined && from === undefined) throw badRequest('from must be an ISO 8601 date-time');
    const to = query.to === undefined ? undefined : parseIsoDate(query.to);
    if (query.to !== undefined && to === undefined) throw badRequest('to must be an ISO 8601 date-time');
    const count = query.count ?? 100;
    const offset = (query.page ?? 0) * count;
    // One snapshot for both tables: the sealer moving records between them mid-listing would
    // otherwise drop them from the page (read before they were sealed, looked for after).
    const snapshot = this.db.getExecutor().adapter instanceof PostgresAdapter ? this.db.transaction().setIsolationLevel('repeatable read') : this.db.transaction();
    return snapshot.execute(async (db) => {
      let filter: ActivityQuery & { subjectsOfPoint?: string[] } = query;
      if (query.dataPointId !== undefined && query.subjectId === undefined) {
        const subjects = await subjectsOfPoint(db, query.dataPointId);
        if (subjects.length === 0) return [];
        filter = { ...query, subjectsOfPoint: subjects };
      }
      const sealed = await filtered(db, db.selectFrom('activity_log').selectAll() as never, filter, from, to)
        .orderBy('sequence')
        .limit(count)
        .offset(offset)
        .execute();
      if (sealed.length === count) return sealed.map(toEntry);
      // The page reaches past the sealed records: how far past decides where the pending ones start.
      let skip = 0;
      if (sealed.length === 0 && offset > 0) {
        const total = await filtered(db, db.selectFrom('activity_log').select((eb) => eb.fn.countAll().as('n')) as never, filter, from, to).executeTakeFirstOrThrow();
        skip = Math.max(0, offset - Number((total as unknown as { n: number | string }).n));
      }
      const pending = await filtered(db, db.selectFrom('activity_pending').selectAll() as never, filter, from, to)
        .orderBy('id' as never)
        .limit(count - sealed.length)
        .offset(skip)
        .execute();
      return [...sealed, ...pending].map((row) => toEntry(row as AnyRecordRow));
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
        .where('data_point_id', '=', dataPointId)
        .where('event_type', '=', 'READ')
        .executeTakeFirst();
      const value = typeof row?.last === 'string' ? row.last : undefined;
      if (value !== undefined && (last === undefined || value > last)) last = value;
    }
    return last;
  }
}

