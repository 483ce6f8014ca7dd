/**
 * The contract of the activity log: one append-only record per read, store, update and
 * delete, of vaulted and report-only data alike.
 *
 * A record is durable before the request that made it is answered: writes append inside
 * their own transaction, so the operation and its record commit together; reads, which have
 * no transaction of their own, hand their records to `record`, which commits them with
 * every other read's records of the moment (group commit). Neither takes a lock that
 * outlives the request's own statements: records are chained later, by the sealer.
 */
import type { Kysely } from 'kysely';
import type { InsertBatch } from '../db/insert-rows.js';
import type { Database } from '../db/schema.js';
import type { EventType, Location } from '../rules/engine.js';
import type { Change } from './changes.js';

/** A data event's type, or `CHANGE`: an administrative change (`changes.ts`). */
export type RecordType = EventType | 'CHANGE';

/** Who did it and where: the same fields in an audit event, a record and a listed entry. */
export interface EventOrigin {
  applicationId: string;
  applicationUser?: string;
  dataStoreName?: string;
  dataStoreServer?: string;
  dataStoreEntityName?: string;
  location?: Location;
}

/** One point a read answered. */
export interface PointRef {
  dataPointId: string;
  attribute: string;
}

export interface ActivityRecord extends EventOrigin {
  eventType: RecordType;
  /** Caller-supplied for audit events (dedupe); generated otherwise. */
  eventId?: string;
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  reportOnly: boolean;
  timestamp: string;
  /**
   * The application whose API key submitted the record; defaults to `applicationId`. Audit
   * events name their application in the body, so the two can differ. Event ids are unique
   * per submitting application.
   */
  recordedBy?: string;
  /** The answer given for an audit event, kept so that a repeated `eventId` gets it again. */
  summary?: unknown;
  /**
   * A read that answered several points of `subjectId`, in the order answered: one record
   * for the request, listed as one entry per point. `dataPointId` and `attribute` stay unset.
   */
  points?: readonly PointRef[];
  /** What an administrative change (`CHANGE`) changed. */
  change?: Change;
}

/**
 * An audit event an application reported (`POST /auditlogs`), as opposed to the vault's own
 * operation on a point, report-only or not: only audit events keep the answer they were given.
 */
export function isAuditEvent(record: ActivityRecord): boolean {
  return record.summary !== undefined;
}

export interface ActivityLog {
  /**
   * Writes the records inside the caller's transaction. A record with an `eventId` that its
   * submitter already used fails the transaction with a unique violation. `inserts`: the
   * caller's batch, which it runs before committing; rows that need no statement of their
   * own before then join it.
   */
  append(trx: Kysely<Database>, records: ActivityRecord[], inserts?: InsertBatch): Promise<void>;
  /**
   * Commits records that belong to no transaction (reads); resolves once they are durable.
   * Never call it while holding a transaction: on SQLite it needs the connection.
   */
  record(records: ActivityRecord[]): Promise<void>;
}
