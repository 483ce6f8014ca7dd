/** Table types of the activity log, joined into the `Database` type in `db/schema.ts`. */
import type { Generated } from 'kysely';
import type { Flag } from '../db/schema.js';

export interface ActivityLogTable {
  /** 1, 2, 3, … without gaps: the record's position in the hash chain, given when it is sealed. */
  sequence: number;
  event_id: string;
  /** The application whose API key submitted the record. */
  recorded_by: string;
  event_type: string;
  subject_id: string | null;
  data_point_id: string | null;
  attribute: string | null;
  /** As the event names it (audit events carry their own); otherwise the caller. */
  application_id: string;
  application_user: string | null;
  data_store_name: string | null;
  data_store_server: string | null;
  data_store_entity_name: string | null;
  country: string | null;
  subdivision: string | null;
  city: string | null;
  report_only: Flag;
  /** When the event happened (ISO 8601 UTC). */
  event_time: string;
  /** When the vault recorded it. */
  recorded_date: string;
  /** JSON of the answer given to an audit event, for repeated event ids. */
  summary: string | null;
  /**
   * A read that answered several points is one record: JSON `[[dataPointId, attribute], …]`
   * in the order answered, and `data_point_id` and `attribute` are null. Null otherwise.
   */
  points: string | null;
  /** An administrative change (`CHANGE` records): JSON of what it changed (`changes.ts`). Null otherwise. */
  change: string | null;
  /** SHA-256 (hex) over the previous record's hash and this record's fields. */
  hash: string;
}

/** A record committed with its request and not yet chained: what the sealer works through. */
export type ActivityPendingTable = Omit<ActivityLogTable, 'sequence' | 'hash'> & {
  /** Insertion order, which is the order the sealer chains in. */
  id: Generated<number>;
};

/** Audit event ids already recorded, per submitting application, with the answer given. */
export interface ActivityEventIdsTable {
  recorded_by: string;
  event_id: string;
  summary: string | null;
}

export interface ActivityTables {
  activity_log: ActivityLogTable;
  activity_pending: ActivityPendingTable;
  activity_event_ids: ActivityEventIdsTable;
}
