/**
 * Administrative changes in the activity log: who gave an application access to what, rolled
 * its key or removed it, put a subject under legal hold or lifted it (an admin, or a rule),
 * purged a subject, changed the rules that decide blocks and holds, or the registry that says
 * what an attribute is (its schema, tags, regulations, whether it is indexed). A privacy
 * officer proves what was done with the data from the same tamper-evident chain as the data
 * events: a `CHANGE` record commits in the transaction of the change it describes, and never
 * holds a secret (an API key's roll is recorded, never the key).
 */
import { userInfo } from 'node:os';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ActivityLog, ActivityRecord, EventOrigin } from './log.js';

export const CHANGE = 'CHANGE';

/** What a change can be about and do; the API's schema lists the same (`routes.ts`). */
export const CHANGE_TARGETS = ['application', 'entity', 'rule', 'attribute', 'entityType', 'tag', 'regulation', 'encryptionKey'] as const;
export const CHANGE_ACTIONS = ['create', 'update', 'delete', 'rollKey', 'rewrap'] as const;
export type ChangeTarget = (typeof CHANGE_TARGETS)[number];
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

export interface Change {
  target: ChangeTarget;
  /**
   * The application's id, the entity's id, the rule's key; the attribute's, entity type's or
   * regulation's key; the tag's name; the encryption key's id (`vault keys list`).
   */
  id: string;
  action: ChangeAction;
  /** The values the change set (for a delete, none). */
  fields?: Record<string, unknown>;
  /** The rule whose action made the change, when a rule did. */
  rule?: string;
}

/**
 * Who made a change: an admin application, or an operator on the vault's machine: the command
 * line (`vault-cli`) or the vault's start (`vault-start`, a new VAULT_ENCRYPTION_PUBLIC_KEY),
 * with the operating system user.
 */
export type ChangeActor = Pick<EventOrigin, 'applicationId' | 'applicationUser'>;

/** An operator's tool, run by this operating system user (it needs no API key: it holds the database itself). */
export function operatorActor(tool: 'vault-cli' | 'vault-start'): ChangeActor {
  return { applicationId: tool, applicationUser: operatingSystemUser() };
}

function operatingSystemUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry (some containers run as a bare uid).
    return process.env.USER ?? process.env.LOGNAME;
  }
}

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

/** Appends the change's record inside `trx`, the transaction that makes the change. */
export function recordChange(log: ActivityLog, trx: Kysely<Database>, actor: ChangeActor, change: Change, timestamp: string): Promise<void> {
  return log.append(trx, [changeRecord(actor, change, timestamp)]);
}

/**
 * A create or an update, from the object before (undefined: a create) and after: a create
 * carries every member among `keys`, an update those that differ (compared as JSON). An
 * update that changed none records nothing: clients post what exists to make sure it does.
 */
export async function recordUpsert<T extends object>(
  log: ActivityLog,
  trx: Kysely<Database>,
  actor: ChangeActor,
  subject: { target: ChangeTarget; id: string; before: T | undefined; after: T; keys: readonly (keyof T & string)[] },
  timestamp: string,
): Promise<void> {
  const { before, after, keys } = subject;
  const fields: Record<string, unknown> = {};
  for (const key of keys) {
    if (before === undefined || JSON.stringify(before[key]) !== JSON.stringify(after[key])) fields[key] = after[key];
  }
  if (before !== undefined && Object.keys(fields).length === 0) return;
  await recordChange(log, trx, actor, { target: subject.target, id: subject.id, action: before === undefined ? 'create' : 'update', fields }, timestamp);
}
