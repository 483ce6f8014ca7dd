/**
 * What the data plane's parts share: their collaborators, the interface's messages, and the
 * writes that more than one part makes (entity locks, structure deletes, activity records).
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Caller } from '../access/caller.js';
import type { ActivityLog, ActivityRecord } from '../activity/log.js';
import type { DataKeys } from '../crypto/datakeys.js';
import type { Keyring } from '../crypto/keys.js';
import type { ValueOpener } from '../crypto/opener.js';
import { forUpdateOnPostgres, type DialectName } from '../db/dialect.js';
import type { WriteGroup } from '../db/write-group.js';
import type { Database, DatapointsTable, Flag } from '../db/schema.js';
import type { DefinitionCatalog } from '../definitions/catalog.js';
import { badRequest } from '../errors.js';
import type { EventType, Location, RulesEngine } from '../rules/engine.js';
import { holdTagsAgainstDelete } from '../tags/repository.js';

/** The data plane's collaborators. Rules and the activity log are looked up per call: tests swap them. */
export interface DataPlaneDeps {
  db: Kysely<Database>;
  /** Where stores run their transaction (on SQLite, stores arriving together share a commit). */
  writes: WriteGroup;
  /** For reads outside transactions: they never wait for a write. */
  reader: Kysely<Database>;
  dialect: DialectName;
  keyring: Keyring;
  dataKeys: DataKeys;
  opener: ValueOpener;
  definitions: DefinitionCatalog;
  rules: () => RulesEngine;
  activity: () => ActivityLog;
  /** The blind-index secret. */
  indexKey: Buffer;
  /** Most bytes a read of several points may answer (`VAULT_READ_LIMIT`). */
  readLimit: number;
  logger: Logger;
}

/** Which path form was called: `/datasubjects/...` adds its own checks. */
export type PathForm = 'entities' | 'datasubjects';

export const MESSAGES = {
  dataNotFound: 'Data Not Found',
  subjectNotFound: 'Data Subject Not Found',
  notDataSubject: 'Entity is not a data subject',
  notOfTypeDataSubject: 'Entity is not of type datasubject',
  forbiddenStore: 'Forbidden access to attribute',
  noSuchAttribute: 'No such attribute',
  noSuchRegulation: 'No such regulation',
  notApplicable: 'Attribute is not applicable to entity type',
  multipleValues: 'Received multiple values for nonrepeatable attribute',
  legalHoldOverwrite: 'Cannot overwrite attribute for data subject, as the data subject is under a legal hold',
  legalHoldDelete: 'Cannot delete data for data subject, as the data subject is under a legal hold',
  integrity: 'Stored data failed its integrity check',
  reportOnly: 'Report-only data is not stored: report it through POST /auditlogs',
  tooManyLeaves: 'A store may hold at most 10000 values, each leaf of a structured value counted',
} as const;

/** As many values as a store may have items (`data`, at most 10,000), however they are nested. */
export const MAX_STORE_LEAVES = 10_000;

export const CHUNK = 400;

export interface EntityRow {
  id: string;
  type: string;
  legal_hold: Flag;
}

/** Reads an entity row; on PostgreSQL also locks it, which serialises stores and purges of one entity. */
export async function lockEntity(trx: Kysely<Database>, dialect: DialectName, id: string): Promise<EntityRow | undefined> {
  return forUpdateOnPostgres(dialect, trx.selectFrom('entities').select(['id', 'type', 'legal_hold']).where('id', '=', id)).executeTakeFirst();
}

/**
 * Every regulation named in a store must exist, asked inside the store's transaction. On
 * PostgreSQL their rows are held until it commits, so a regulation's delete through another
 * process either waits and then takes its labels off these points too, or commits first
 * and this store is refused.
 */
export async function requireRegulations(trx: Kysely<Database>, dialect: DialectName, keys: string[]): Promise<void> {
  const unique = [...new Set(keys)];
  if (unique.length === 0) return;
  let query = trx.selectFrom('regulations').select('key').where('key', 'in', unique);
  if (dialect === 'postgres') query = query.forShare();
  const found = await query.execute();
  if (found.length !== unique.length) throw badRequest(MESSAGES.noSuchRegulation);
}

/** Deletes root points with all their sub-points and labels. */
export async function deleteStructures(trx: Kysely<Database>, rootIds: string[]): Promise<void> {
  if (rootIds.length > 0) await holdTagsAgainstDelete(trx);
  for (let i = 0; i < rootIds.length; i += CHUNK) {
    const chunk = rootIds.slice(i, i + CHUNK);
    const subs = await trx.selectFrom('datapoints').select('id').where('structure_root_id', 'in', chunk).execute();
    const ids = [...chunk, ...subs.map((s) => s.id)];
    for (let j = 0; j < ids.length; j += CHUNK) {
      const part = ids.slice(j, j + CHUNK);
      await trx.deleteFrom('datapoint_tags').where('datapoint_id', 'in', part).execute();
      await trx.deleteFrom('datapoint_regulations').where('datapoint_id', 'in', part).execute();
      await trx.deleteFrom('datapoints').where('id', 'in', part).execute();
    }
  }
}

/** The activity record of one operation on one (root) point. */
export function pointRecord(
  caller: Caller,
  eventType: EventType,
  point: Pick<DatapointsTable, 'id' | 'entity_id' | 'attribute' | 'report_only'>,
  location: Location | undefined,
  timestamp: string,
): ActivityRecord {
  return {
    eventType,
    subjectId: point.entity_id,
    dataPointId: point.id,
    attribute: point.attribute,
    applicationId: caller.applicationId,
    ...(location ? { location } : {}),
    reportOnly: point.report_only === 1,
    timestamp,
  };
}
