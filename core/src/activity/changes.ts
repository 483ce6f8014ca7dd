/**
 * Administrative changes in the activity log: who gave an application access to what, rolled
 * its key or removed it, put a subject under legal hold or lifted it (an admin, or a rule),
 * purged a subject, changed the rules that decide blocks and holds, or the registry that says
 * what an attribute is (its schema, tags, regulations, whether it is indexed). A privacy
 * officer proves what was done with the data from the same tamper-evident chain as the data
 * events: a `CHANGE` record commits in the transaction of the change it describes, and never
 * holds a secret (an API key's roll is recorded, never the key).
 */
import type { ActivityRecord, EventOrigin } from './log.js';

export const CHANGE = 'CHANGE';

export type ChangeTarget = 'application' | 'entity' | 'rule' | 'attribute' | 'entityType' | 'tag' | 'regulation';
export type ChangeAction = 'create' | 'update' | 'delete' | 'rollKey';

export interface Change {
  target: ChangeTarget;
  /** The application's id, the entity's id, the rule's key; the attribute's, entity type's or regulation's key; the tag's name. */
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
    // Found with the rest of a subject's or an attribute's history (`GET /activity?subjectId=`, `?attribute=`).
    ...(change.target === 'entity' ? { subjectId: change.id } : {}),
    ...(change.target === 'attribute' ? { attribute: change.id } : {}),
    reportOnly: false,
    timestamp,
    change,
  };
}

/**
 * The members of `after` (among `keys`) that differ from `before`, compared as JSON: what an
 * update set, without what it sent unchanged. `before` undefined (a create): all of them.
 */
export function changedFields<T extends object>(before: T | undefined, after: T, keys: readonly (keyof T & string)[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of keys) {
    if (before === undefined || JSON.stringify(before[key]) !== JSON.stringify(after[key])) fields[key] = after[key];
  }
  return fields;
}
