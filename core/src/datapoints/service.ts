/**
 * The encrypted data plane: storing, reading and deleting attribute values of entities.
 *
 * Every value is sealed (AES-256-GCM) under a per-subject data key before it reaches the
 * database; indexed attributes also get a blind index per leaf. Reads need the private key
 * in the request. Each operation is one transaction: the rules engine, the activity log and
 * the data commit or roll back together.
 */
import type { Kysely } from 'kysely';
import { canAccessAttribute, type Caller } from '../access/caller.js';
import type { ActivityRecord } from '../activity/log.js';
import { blindIndex } from '../blindindex/blindindex.js';
import { DataKeys } from '../crypto/datakeys.js';
import { EnvelopeError, openValue, sealValue } from '../crypto/envelope.js';
import type { DecryptionCredential } from '../crypto/keys.js';
import type { Database, DatapointsTable, Flag } from '../db/schema.js';
import { findDefinitions, type Definition } from '../definitions/repository.js';
import { checkValue, isStructured, type Leaf } from '../definitions/schema.js';
import { badRequest, conflict, forbidden, notFound, VaultError } from '../errors.js';
import { DATASUBJECT } from '../entitytypes/service.js';
import { locate } from '../geo/locate.js';
import { runAfterCommit, type CandidatePoint, type EventType, type Location, type RuleEffects, type RuleEntity } from '../rules/engine.js';
import { resolveForStore } from '../entities/service.js';
import { ensureTags } from '../tags/repository.js';
import { checkTagNames } from '../tags/service.js';
import { nowIso } from '../util/time.js';
import type { Vault } from '../vault.js';
import { newPointId } from './ids.js';
import { isSensitivity, loadLabels, POINT_COLUMNS, SENSITIVITY_MESSAGE, toDataPoint, type DataPoint, type PointRow } from './model.js';

/** Which path form was called: `/datasubjects/...` adds its own checks. */
export type PathForm = 'entities' | 'datasubjects';

export interface AttributeInput {
  attribute: string;
  value?: unknown;
  dataPointId?: string;
  regulations?: string[];
  tags?: string[];
  sensitivity?: unknown;
  reportOnly?: boolean;
  accessibility?: string;
}

export interface StorageRequest {
  data: AttributeInput[];
  entityType?: string;
  namespace?: string;
  origin?: string;
}

export interface StoreInput {
  entityId: string;
  request: StorageRequest;
  /** The X-Encryption-Key header, as received. */
  encryptionKey: unknown;
  /** The client's address (Fastify's request.ip, which honours trust-proxy). */
  clientAddress?: string;
  form: PathForm;
}

export interface ReadInput {
  entityId: string;
  /** The X-Decryption-Key header, as received. */
  decryptionKey: unknown;
  form: PathForm;
}

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
} as const;

const CHUNK = 400;

interface EntityRow {
  id: string;
  type: string;
  legal_hold: Flag;
}

/** One attribute of the request, checked and about to be written. */
interface Planned {
  definition: Definition;
  input: AttributeInput;
  leaves: Leaf[];
  candidate: CandidatePoint;
  /** The root point it replaces (nonrepeatable overwrite): its id and creation date are kept. */
  replaces?: { id: string; created_date: string };
}

export class DataPointService {
  readonly dataKeys: DataKeys;

  constructor(private readonly vault: Vault) {
    this.dataKeys = new DataKeys();
  }

  private get db(): Kysely<Database> {
    return this.vault.db;
  }

  // ---------------------------------------------------------------- store

  async store(caller: Caller, input: StoreInput): Promise<DataPoint[]> {
    const requestedKey = await this.vault.keyring.requirePublicKey(input.encryptionKey);
    // New data keys are wrapped by the active key (the header only has to be a registered one).
    const registered = await this.vault.keyring.registered();
    const wrapping = registered.find((k) => k.status === 'active') ?? requestedKey;
    const items = input.request.data;
    if (items.length === 0) return [];
    for (const item of items) {
      if (!canAccessAttribute(caller, item.attribute)) throw forbidden(MESSAGES.forbiddenStore);
    }
    for (const item of items) {
      if (item.sensitivity !== undefined && !isSensitivity(item.sensitivity)) throw badRequest(SENSITIVITY_MESSAGE);
      if (item.tags) checkTagNames(item.tags);
      // Storing would keep the very value the client asked not to keep.
      if (item.reportOnly === true) throw badRequest(MESSAGES.reportOnly);
    }
    const location = locate(input.request.origin ?? input.clientAddress);
    const requestedType = input.request.entityType ?? (input.form === 'datasubjects' ? DATASUBJECT : undefined);

    const effects: RuleEffects[] = [];
    const stored = await this.db.transaction().execute(async (trx) => {
      const definitions = await findDefinitions(trx, items.map((i) => i.attribute));
      for (const item of items) if (!definitions.has(item.attribute)) throw badRequest(MESSAGES.noSuchAttribute);
      await requireRegulations(trx, items.flatMap((i) => i.regulations ?? []));
      const seen = new Set<string>();
      for (const item of items) {
        const definition = definitions.get(item.attribute)!;
        if (!definition.repeatable && seen.has(definition.key)) throw conflict(MESSAGES.multipleValues);
        seen.add(definition.key);
      }
      const leaves = items.map((item) => checkValue(definitions.get(item.attribute)!.schema, item.value, item.attribute));

      const entity = await this.resolveEntity(trx, input.entityId, requestedType);
      for (const definition of definitions.values()) {
        const types = definition.entityTypes.length > 0 ? definition.entityTypes : [DATASUBJECT];
        if (!types.includes(entity.type)) throw badRequest(MESSAGES.notApplicable);
      }
      const entityTags = entity.tags;

      const overwritten = await this.existingRoots(trx, entity.id, [...definitions.values()].filter((d) => !d.repeatable).map((d) => d.key));
      if (overwritten.size > 0 && entity.legal_hold === 1) throw forbidden(MESSAGES.legalHoldOverwrite);
      await this.vault.rules.checkProhibited(trx, entity.id, 'STORE');
      if (overwritten.size > 0) await this.vault.rules.checkProhibited(trx, entity.id, 'UPDATE');

      const planned: Planned[] = items.map((item, i) => {
        const definition = definitions.get(item.attribute)!;
        const previous = overwritten.get(definition.key);
        return {
          definition,
          input: item,
          leaves: leaves[i],
          replaces: previous?.[0],
          candidate: {
            attribute: definition.key,
            value: item.value,
            leaves: leaves[i],
            tags: new Set([...definition.tags, ...entityTags, ...(item.tags ?? [])]),
            regulations: new Set([...definition.regulations, ...(item.regulations ?? [])]),
            sensitivity: (item.sensitivity as string | undefined) ?? 'NORMAL',
          },
        };
      });

      const ruleEntity: RuleEntity = { id: entity.id, type: entity.type, tags: new Set(entityTags), legalHold: entity.legal_hold === 1 };
      for (const eventType of ['STORE', 'UPDATE'] as const) {
        const points = planned.filter((p) => (p.replaces ? 'UPDATE' : 'STORE') === eventType).map((p) => p.candidate);
        if (points.length === 0) continue;
        effects.push(await this.vault.rules.evaluateData({ trx, caller, entity: ruleEntity, points, location, eventType, reportOnly: false }));
      }

      const now = nowIso();
      const dataKey = await this.dataKeys.forStore(trx, entity.id, wrapping, now, registered);
      await ensureTags(trx, planned.flatMap((p) => [...p.candidate.tags]));
      const oldRoots = [...overwritten.values()].flat().map((r) => r.id);
      if (oldRoots.length > 0) await deleteStructures(trx, oldRoots);

      const rows: DatapointsTable[] = [];
      const labels: Array<{ id: string; tags: Set<string>; regulations: Set<string> }> = [];
      const roots: DatapointsTable[] = [];
      for (const plan of planned) {
        const { definition, candidate } = plan;
        const rootId = plan.replaces?.id ?? newPointId();
        const base = {
          entity_id: entity.id,
          definition_key: definition.key,
          report_only: 0 as Flag,
          sensitivity: candidate.sensitivity,
          subject_key_id: dataKey.id,
          country: location?.country ?? null,
          subdivision: location?.subdivision ?? null,
          city: location?.city ?? null,
          expires_at: candidate.expiresAt ?? null,
          auto_delete: (candidate.autoDelete ? 1 : 0) as Flag,
          modified_date: now,
        };
        const structured = isStructured(definition.schema);
        const root: DatapointsTable = {
          ...base,
          id: rootId,
          attribute: definition.key,
          structure_root_id: null,
          ciphertext: sealValue(dataKey.key, plan.input.value, rootId, definition.key),
          blind_index: definition.indexed && !structured ? blindIndex(this.vault.indexKey, definition.key, plan.leaves[0].value) : null,
          created_date: plan.replaces?.created_date ?? now,
        };
        rows.push(root);
        roots.push(root);
        labels.push({ id: rootId, tags: candidate.tags, regulations: candidate.regulations });
        if (!structured) continue;
        for (const leaf of plan.leaves) {
          const id = newPointId();
          rows.push({
            ...base,
            id,
            attribute: leaf.attribute,
            structure_root_id: rootId,
            ciphertext: sealValue(dataKey.key, leaf.value, id, leaf.attribute),
            blind_index: definition.indexed ? blindIndex(this.vault.indexKey, leaf.attribute, leaf.value) : null,
            created_date: now,
          });
          labels.push({ id, tags: candidate.tags, regulations: candidate.regulations });
        }
      }
      for (let i = 0; i < rows.length; i += CHUNK) await trx.insertInto('datapoints').values(rows.slice(i, i + CHUNK)).execute();
      const tagRows = labels.flatMap((l) => [...l.tags].map((tag) => ({ datapoint_id: l.id, tag })));
      const regulationRows = labels.flatMap((l) => [...l.regulations].map((regulation) => ({ datapoint_id: l.id, regulation })));
      for (let i = 0; i < tagRows.length; i += CHUNK) await trx.insertInto('datapoint_tags').values(tagRows.slice(i, i + CHUNK)).execute();
      for (let i = 0; i < regulationRows.length; i += CHUNK) await trx.insertInto('datapoint_regulations').values(regulationRows.slice(i, i + CHUNK)).execute();

      // Last write of the transaction: the log's lock is held until commit.
      await this.vault.activity.append(
        trx,
        planned.map((plan, i) => this.record(caller, plan.replaces ? 'UPDATE' : 'STORE', roots[i], location, now)),
      );
      const labelsById = {
        tags: new Map(labels.map((l) => [l.id, [...l.tags].sort()])),
        regulations: new Map(labels.map((l) => [l.id, [...l.regulations].sort()])),
      };
      return roots.map((row, i) => toDataPoint(row, labelsById, { value: planned[i].input.value }));
    });
    runAfterCommit(effects, (err) => this.vault.logger.error({ err }, 'rule effect failed after a store'));
    return stored;
  }

  /**
   * The entity a store writes to: created with the requested type (default `datasubject`)
   * when it does not exist, with the interface's 400s otherwise, then locked for the rest
   * of the transaction (PostgreSQL) so its legal hold is read as it stands.
   */
  private async resolveEntity(trx: Kysely<Database>, id: string, requestedType: string | undefined): Promise<EntityRow & { tags: string[] }> {
    const { entity } = await resolveForStore(trx, id, requestedType);
    const locked = await this.lockEntity(trx, id);
    if (!locked) throw new Error('entity vanished while being stored to');
    return { ...locked, tags: entity.tags };
  }

  /** Reads an entity row; on PostgreSQL also locks it, which serialises stores and purges of one entity. */
  private async lockEntity(trx: Kysely<Database>, id: string): Promise<EntityRow | undefined> {
    let query = trx.selectFrom('entities').select(['id', 'type', 'legal_hold']).where('id', '=', id);
    if (this.vault.dialect === 'postgres') query = query.forUpdate();
    return query.executeTakeFirst();
  }

  /** Existing vaulted root points of these (nonrepeatable) definitions, oldest first. */
  private async existingRoots(trx: Kysely<Database>, entityId: string, keys: string[]): Promise<Map<string, Array<{ id: string; created_date: string }>>> {
    const out = new Map<string, Array<{ id: string; created_date: string }>>();
    if (keys.length === 0) return out;
    const rows = await trx
      .selectFrom('datapoints')
      .select(['id', 'attribute', 'created_date'])
      .where('entity_id', '=', entityId)
      .where('attribute', 'in', keys)
      .where('structure_root_id', 'is', null)
      .where('report_only', '=', 0)
      .orderBy('created_date')
      .orderBy('id')
      .execute();
    for (const row of rows) {
      const list = out.get(row.attribute) ?? [];
      list.push({ id: row.id, created_date: row.created_date });
      out.set(row.attribute, list);
    }
    return out;
  }

  // ---------------------------------------------------------------- reads

  /** `GET .../{entityId}/attributes/{attributeKey}`: every value of one attribute. */
  async readAttribute(caller: Caller, input: ReadInput & { attributeKey: string }): Promise<DataPoint[]> {
    const credential = await this.vault.keyring.requireDecryptionKey(input.decryptionKey);
    if (!canAccessAttribute(caller, input.attributeKey)) throw forbidden();
    await this.readableEntity(input.entityId, input.form);
    const rows = await this.db
      .selectFrom('datapoints')
      .select(POINT_COLUMNS)
      .select('ciphertext')
      .where('entity_id', '=', input.entityId)
      .where('attribute', '=', input.attributeKey)
      .where('report_only', '=', 0)
      .orderBy('created_date')
      .orderBy('id')
      .execute();
    const points = await this.decrypt(rows, credential);
    if (points.length === 0) throw notFound(MESSAGES.dataNotFound);
    await this.recordReads(caller, points);
    return points;
  }

  /**
   * `GET .../{entityId}/attributes[?attributes=A,B]`: the listed attributes (each must be
   * accessible), or every root value the application may access.
   */
  async readAttributes(caller: Caller, input: ReadInput & { attributes?: string[] }): Promise<DataPoint[]> {
    const credential = await this.vault.keyring.requireDecryptionKey(input.decryptionKey);
    const requested = input.attributes
      ?.flatMap((a) => a.split(','))
      .map((a) => a.trim())
      .filter((a) => a.length > 0);
    const listed = requested !== undefined && requested.length > 0;
    if (listed && requested.some((a) => !canAccessAttribute(caller, a))) throw forbidden();
    await this.readableEntity(input.entityId, input.form);
    let query = this.db
      .selectFrom('datapoints')
      .select(POINT_COLUMNS)
      .select('ciphertext')
      .where('entity_id', '=', input.entityId)
      .where('report_only', '=', 0);
    if (listed) {
      query = query.where('attribute', 'in', [...new Set(requested)]);
    } else {
      query = query.where('structure_root_id', 'is', null);
      if (caller.attributes !== '*') {
        if (caller.attributes.size === 0) throw notFound(MESSAGES.dataNotFound);
        query = query.where('definition_key', 'in', [...caller.attributes]);
      }
    }
    const rows = await query.orderBy('created_date').orderBy('id').execute();
    const points = await this.decrypt(rows, credential);
    if (points.length === 0) throw notFound(MESSAGES.dataNotFound);
    await this.recordReads(caller, points);
    return points;
  }

  /** `GET /data/{dataPointId}`. A report-only point has no value to return. */
  async readPoint(caller: Caller, dataPointId: string, decryptionKey: unknown): Promise<DataPoint> {
    const credential = await this.vault.keyring.requireDecryptionKey(decryptionKey);
    const row = await this.db.selectFrom('datapoints').select(POINT_COLUMNS).select('ciphertext').where('id', '=', dataPointId).executeTakeFirst();
    if (!row) throw notFound(MESSAGES.dataNotFound);
    if (!canAccessAttribute(caller, row.attribute)) throw forbidden();
    await this.vault.rules.checkProhibited(this.db, row.entity_id, 'READ');
    const [point] = await this.decrypt([row], credential);
    if (!point) throw notFound(MESSAGES.dataNotFound);
    await this.recordReads(caller, [point]);
    return point;
  }

  private async readableEntity(entityId: string, form: PathForm): Promise<void> {
    const entity = await this.db.selectFrom('entities').select(['id', 'type']).where('id', '=', entityId).executeTakeFirst();
    if (!entity) throw notFound(MESSAGES.dataNotFound);
    if (form === 'datasubjects' && entity.type !== DATASUBJECT) throw badRequest(MESSAGES.notDataSubject);
    await this.vault.rules.checkProhibited(this.db, entityId, 'READ');
  }

  /**
   * Opens the rows' values: one RSA decryption per data key not yet in memory, none for the
   * rest. Rows whose data key is gone (purged meanwhile) are left out.
   */
  private async decrypt(rows: Array<PointRow & { ciphertext: Buffer | null }>, credential: DecryptionCredential): Promise<DataPoint[]> {
    if (rows.length === 0) return [];
    const keyIds = rows.filter((r) => r.ciphertext && r.subject_key_id).map((r) => r.subject_key_id!);
    const keys = await this.dataKeys.forRead(this.db, keyIds, credential);
    const labels = await loadLabels(this.db, rows.map((r) => r.id));
    const out: DataPoint[] = [];
    for (const row of rows) {
      if (!row.ciphertext || !row.subject_key_id) {
        out.push(toDataPoint(row, labels));
        continue;
      }
      const key = keys.get(row.subject_key_id);
      if (!key) continue;
      let value: unknown;
      try {
        value = openValue(key, Buffer.from(row.ciphertext), row.id, row.attribute);
      } catch (err) {
        if (!(err instanceof EnvelopeError)) throw err;
        this.vault.logger.error({ dataPointId: row.id }, 'a stored ciphertext failed authentication');
        throw new VaultError(500, MESSAGES.integrity);
      }
      out.push(toDataPoint(row, labels, { value }));
    }
    return out;
  }

  private async recordReads(caller: Caller, points: DataPoint[]): Promise<void> {
    const now = nowIso();
    await this.db.transaction().execute((trx) =>
      this.vault.activity.append(
        trx,
        points.map((p) => ({
          eventType: 'READ' as const,
          subjectId: p.entityId,
          dataPointId: p.dataPointId,
          attribute: p.attribute,
          applicationId: caller.applicationId,
          reportOnly: p.reportOnly,
          timestamp: now,
        })),
      ),
    );
  }

  // ---------------------------------------------------------------- deletes

  /** `DELETE .../{entityId}/attributes/{attributeKey}`: every value of the attribute. */
  async deleteAttribute(caller: Caller, input: { entityId: string; attributeKey: string; form: PathForm }): Promise<void> {
    if (!canAccessAttribute(caller, input.attributeKey)) throw forbidden();
    await this.db.transaction().execute(async (trx) => {
      const entity = await this.lockEntity(trx, input.entityId);
      if (!entity) throw notFound(MESSAGES.dataNotFound);
      if (input.form === 'datasubjects' && entity.type !== DATASUBJECT) throw badRequest(MESSAGES.notOfTypeDataSubject);
      const matched = await trx
        .selectFrom('datapoints')
        .select(['id', 'structure_root_id'])
        .where('entity_id', '=', entity.id)
        .where('attribute', '=', input.attributeKey)
        .execute();
      if (matched.length === 0) throw notFound(MESSAGES.dataNotFound);
      if (entity.legal_hold === 1) throw forbidden(MESSAGES.legalHoldDelete);
      await this.vault.rules.checkProhibited(trx, entity.id, 'DELETE');
      await this.deleteRootsAndRecord(trx, caller, [...new Set(matched.map((r) => r.structure_root_id ?? r.id))]);
    });
  }

  /**
   * `DELETE /data/{dataPointId}`. A sub-point is a view of part of its root's value, so
   * deleting one deletes the whole structured value: nothing of it stays readable.
   */
  async deletePoint(caller: Caller, dataPointId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('datapoints').select(['id', 'entity_id', 'attribute', 'structure_root_id']).where('id', '=', dataPointId).executeTakeFirst();
      if (!row) throw notFound(MESSAGES.dataNotFound);
      if (!canAccessAttribute(caller, row.attribute)) throw forbidden();
      const entity = await this.lockEntity(trx, row.entity_id);
      if (entity?.legal_hold === 1) throw forbidden(MESSAGES.legalHoldDelete);
      await this.vault.rules.checkProhibited(trx, row.entity_id, 'DELETE');
      await this.deleteRootsAndRecord(trx, caller, [row.structure_root_id ?? row.id]);
    });
  }

  /**
   * `DELETE /datasubjects/{id}/data` and `/entities/{id}/data`: every point, the subject's
   * wrapped data keys (crypto-shredding: its ciphertext in any backup is now unreadable) and
   * the entity itself. The activity history stays.
   */
  async purge(caller: Caller, input: { entityId: string; form: PathForm }): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const entity = await this.lockEntity(trx, input.entityId);
      if (!entity) throw notFound(MESSAGES.subjectNotFound);
      if (input.form === 'datasubjects' && entity.type !== DATASUBJECT) throw badRequest(MESSAGES.notOfTypeDataSubject);
      if (caller.attributes !== '*') {
        const keys = await trx.selectFrom('datapoints').select('definition_key').distinct().where('entity_id', '=', entity.id).execute();
        if (keys.some((k) => !canAccessAttribute(caller, k.definition_key))) throw forbidden();
      }
      if (entity.legal_hold === 1) throw forbidden(MESSAGES.legalHoldDelete);
      await this.vault.rules.checkProhibited(trx, entity.id, 'DELETE');
      const roots = await trx
        .selectFrom('datapoints')
        .select(['id', 'entity_id', 'attribute', 'report_only'])
        .where('entity_id', '=', entity.id)
        .where('structure_root_id', 'is', null)
        .orderBy('created_date')
        .orderBy('id')
        .execute();
      const ofEntity = trx.selectFrom('datapoints').select('id').where('entity_id', '=', entity.id);
      await trx.deleteFrom('datapoint_tags').where('datapoint_id', 'in', ofEntity).execute();
      await trx.deleteFrom('datapoint_regulations').where('datapoint_id', 'in', ofEntity).execute();
      await trx.deleteFrom('datapoints').where('entity_id', '=', entity.id).execute();
      await trx
        .deleteFrom('subject_key_wraps')
        .where('subject_key_id', 'in', trx.selectFrom('subject_keys').select('id').where('entity_id', '=', entity.id))
        .execute();
      await trx.deleteFrom('subject_keys').where('entity_id', '=', entity.id).execute();
      await trx.deleteFrom('entity_tags').where('entity_id', '=', entity.id).execute();
      // Rule state about the subject goes with it: a new subject reusing the id starts clean.
      await trx.deleteFrom('entity_prohibitions').where('entity_id', '=', entity.id).execute();
      await trx.deleteFrom('idle_retention').where('entity_id', '=', entity.id).execute();
      await trx.deleteFrom('entities').where('id', '=', entity.id).execute();
      this.dataKeys.evictEntity(entity.id);
      const now = nowIso();
      await this.vault.activity.append(
        trx,
        roots.map((r) => this.record(caller, 'DELETE', r, undefined, now)),
      );
    });
    // Again after commit: a read between the eviction and the commit may have cached a key.
    this.dataKeys.evictEntity(input.entityId);
  }

  private async deleteRootsAndRecord(trx: Kysely<Database>, caller: Caller, rootIds: string[]): Promise<void> {
    const roots = await trx.selectFrom('datapoints').select(['id', 'entity_id', 'attribute', 'report_only']).where('id', 'in', rootIds).orderBy('created_date').orderBy('id').execute();
    await deleteStructures(trx, rootIds);
    const now = nowIso();
    await this.vault.activity.append(
      trx,
      roots.map((r) => this.record(caller, 'DELETE', r, undefined, now)),
    );
  }

  private record(
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
}

/** Every regulation named in a store must exist. */
async function requireRegulations(trx: Kysely<Database>, keys: string[]): Promise<void> {
  const unique = [...new Set(keys)];
  if (unique.length === 0) return;
  const found = await trx.selectFrom('regulations').select('key').where('key', 'in', unique).execute();
  if (found.length !== unique.length) throw badRequest(MESSAGES.noSuchRegulation);
}

/** Deletes root points with all their sub-points and labels. */
export async function deleteStructures(trx: Kysely<Database>, rootIds: string[]): Promise<void> {
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
