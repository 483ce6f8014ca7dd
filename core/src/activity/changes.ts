/**
 * Administrative changes in the activity log: who gave an application access to what, rolled
 * its key or removed it, put a subject under legal hold or lifted it (an admin, or a rule),
 * and changed the rules that decide blocks and holds. A privacy officer proves what was done
 * with the data from the same tamper-evident chain as the data events: a `CHANGE` record
 * commits in the transaction of the change it describes, and never holds a secret (an API
 * key's roll is recorded, never the key).
 */
import type { ActivityRecord, EventOrigin } from './log.js';

export const CHANGE = 'CHANGE';

export type ChangeTarget = 'application' | 'entity' | 'rule';
export type ChangeAction = 'create' | 'update' | 'delete' | 'rollKey';

export interface Change {
  target: ChangeTarget;
  /** The application's id, the entity's id, the rule's name. */
  id: string;
  action: ChangeAction;
  /** The values the change set (for a delete, none). */
  fields?: Record<string, unknown>;
  /** The rule whose action made the change, when a rule did. */
  rule?: string;
}

/** Who made a change: an admin application, or the command line (`vault-cli`, with the operating system user). */
export type ChangeActor = Pick<EventOrigin, 'applicationId' | 'applicationUser'>;

export function changeRecord(actor: ChangeActor, change: Change, timestamp: string): ActivityRecord {
  return {
    eventType: CHANGE,
    applicationId: actor.applicationId,
    ...(actor.applicationUser !== undefined ? { applicationUser: actor.applicationUser } : {}),
    // A subject's hold is found with the rest of its history (`GET /activity?subjectId=`).
    ...(change.target === 'entity' ? { subjectId: change.id } : {}),
    reportOnly: false,
    timestamp,
    change,
  };
}
