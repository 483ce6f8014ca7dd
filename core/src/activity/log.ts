/**
 * The contract of the activity log: one append-only record per read, store, update and
 * delete, of vaulted and report-only data alike. Appends happen inside the caller's
 * transaction so an operation and its record commit together.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EventType, Location } from '../rules/engine.js';

export interface ActivityRecord {
  eventType: EventType;
  /** Caller-supplied for audit events (dedupe); generated otherwise. */
  eventId?: string;
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
  /**
   * The application whose API key submitted the record; defaults to `applicationId`. Audit
   * events name their application in the body, so the two can differ. Event ids are unique
   * per submitting application.
   */
  recordedBy?: string;
  /** The answer given for an audit event, kept so that a repeated `eventId` gets it again. */
  summary?: unknown;
}

export interface ActivityLog {
  /**
   * Appends in order. On PostgreSQL this takes the log's transaction lock until commit, so
   * make it the last write of the transaction: taking other locks after it invites deadlocks.
   */
  append(trx: Kysely<Database>, records: ActivityRecord[]): Promise<void>;
}

/** Placeholder until the activity module lands: records nothing. */
export const discardActivity: ActivityLog = {
  append: async () => {},
};
