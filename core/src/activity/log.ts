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
}

export interface ActivityLog {
  append(trx: Kysely<Database>, records: ActivityRecord[]): Promise<void>;
}

/** Placeholder until the activity module lands: records nothing. */
export const discardActivity: ActivityLog = {
  append: async () => {},
};
