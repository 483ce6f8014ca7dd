/**
 * Storing attribute values: every value sealed (AES-256-GCM) under the subject's data key,
 * indexed attributes blind-indexed per leaf, the rules run, and the points, their labels and
 * the STORE/UPDATE records written in one transaction.
 */
import type { Kysely } from 'kysely';
import { canAccessAttribute, type Caller } from '../access/caller.js';
import type { Alert } from '../alerts/service.js';
import { blindIndex } from '../blindindex/blindindex.js';
import { sealValue } from '../crypto/envelope.js';
import { InsertBatch } from '../db/insert-rows.js';
import type { DialectName } from '../db/dialect.js';
import type { Database, DatapointsTable, Flag } from '../db/schema.js';
import { appliesTo, type Definition } from '../definitions/repository.js';
import { checkValue, isStructured, type Leaf } from '../definitions/schema.js';
import { resolveForStore } from '../entities/service.js';
import { DATASUBJECT } from '../entitytypes/service.js';
import { badRequest, BUSY_MESSAGE, conflict, forbidden, tooLarge, VaultError } from '../errors.js';
import { locate } from '../geo/locate.js';
import { runAfterCommit, type CandidatePoint, type RuleEffects, type RuleEntity } from '../rules/engine.js';
import { ensureTags } from '../tags/repository.js';
import { checkTagNameShapes, requireStoredTags } from '../tags/service.js';
import { PROHIBITED_MESSAGE } from '../rules/prohibitions.js';
import { nowIso } from '../util/time.js';
import { newPointId } from './ids.js';
import { findStoreContext } from './store-context.js';
import { isSensitivity, SENSITIVITY_MESSAGE, toDataPoint, VAULTED, type DataPoint } from './model.js';
import { deleteStructures, MAX_STORE_LEAVES, MESSAGES, pointRecord, requireRegulations, type DataPlaneDeps, type PathForm } from './plane.js';

export interface AttributeInput {
  attribute: string;
  value?: unknown;
  dataPointId?: string | null;
  regulations?: string[] | null;
  tags?: string[] | null;
  sensitivity?: unknown;
  reportOnly?: boolean | null;
  accessibility?: string | null;
}

export interface StorageRequest {
  data: AttributeInput[];
  entityType?: string | null;
  namespace?: string | null;
  origin?: string | null;
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

/** One attribute of the request, checked and about to be written. */
interface Planned {
  definition: Definition;
  input: AttributeInput;
  leaves: Leaf[];
  /** Known before the rules run, so alerts name the point they are about. */
  rootId: string;
  candidate: CandidatePoint;
  /** The root point it replaces (nonrepeatable overwrite): its id and creation date are kept. */
  replaces?: { id: string; created_date: string };
}

/** The definitions a store was checked against changed before it committed. */
class StaleDefinitions extends Error {}

/** How often a store starts over on definitions that changed under it before it gives up. */
const DEFINITION_ATTEMPTS = 3;

/**
 * The definitions a store was checked against, as they are now: a definition changed or
 * deleted through another process in the catalog's half second must not let a store in
 * (a string into an int, two values into a nonrepeatable attribute, points of a definition
 * already gone). On PostgreSQL the rows are also held against change until the store
 * commits; a change takes the row's lock first, so one of the two waits for the other.
 * SQLite runs one write transaction at a time, so the read alone settles it.
 */
async function confirmDefinitions(trx: Kysely<Database>, definitions: Map<string, Definition>, dialect: DialectName): Promise<void> {
  let query = trx.selectFrom('attribute_definitions').select(['key', 'modified_date']).where('key', 'in', [...definitions.keys()]);
  if (dialect === 'postgres') query = query.forShare();
  const current = new Map((await query.execute()).map((row) => [row.key, row.modified_date]));
  for (const definition of definitions.values()) {
    if (current.get(definition.key) !== definition.modifiedDate) throw new StaleDefinitions();
  }
}

export class DataPointStore {
  constructor(private readonly deps: DataPlaneDeps) {}

  async store(caller: Caller, input: StoreInput): Promise<DataPoint[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.storeOnce(caller, input);
      } catch (err) {
        if (!(err instanceof StaleDefinitions)) throw err;
        // Checked again against the definitions as they are now: refused if they refuse it.
        this.deps.definitions.invalidate();
        if (attempt >= DEFINITION_ATTEMPTS) throw new VaultError(503, BUSY_MESSAGE);
      }
    }
  }

  private async storeOnce(caller: Caller, input: StoreInput): Promise<DataPoint[]> {
    const { keyring, dataKeys, rules, activity } = this.deps;
    const requestedKey = await keyring.requirePublicKey(input.encryptionKey);
    // New data keys are wrapped by the active key (the header only has to be a registered one).
    const registered = await keyring.registered();
    const wrapping = registered.find((k) => k.status === 'active') ?? requestedKey;
    const items = input.request.data;
    if (items.length === 0) return [];
    for (const item of items) {
      if (!canAccessAttribute(caller, item.attribute)) throw forbidden(MESSAGES.forbiddenStore);
    }
    // Tags stored by an earlier release, with a control character in their name, may be given
    // (looked up only for such names).
    const legacyTags: string[] = [];
    for (const item of items) {
      if (item.sensitivity !== undefined && item.sensitivity !== null && !isSensitivity(item.sensitivity)) throw badRequest(SENSITIVITY_MESSAGE);
      if (item.tags) legacyTags.push(...checkTagNameShapes(item.tags));
      // Storing would keep the very value the client asked not to keep.
      if (item.reportOnly === true) throw badRequest(MESSAGES.reportOnly);
    }
    await requireStoredTags(this.deps.db, legacyTags);
    // Before the transaction: everything that needs no lock is done while holding none.
    let definitions = await this.deps.definitions.find(items.map((i) => i.attribute));
    const unknown = items.filter((i) => !definitions.has(i.attribute)).map((i) => i.attribute);
    // Defined through another process in the catalog's half second? Asked for by key, cheaply.
    if (unknown.length > 0 && (await this.deps.db.selectFrom('attribute_definitions').select('key').where('key', 'in', unknown).limit(1).executeTakeFirst())) {
      this.deps.definitions.invalidate();
      definitions = await this.deps.definitions.find(items.map((i) => i.attribute));
    }
    for (const item of items) if (!definitions.has(item.attribute)) throw badRequest(MESSAGES.noSuchAttribute);
    const seen = new Set<string>();
    for (const item of items) {
      const definition = definitions.get(item.attribute)!;
      if (!definition.repeatable && seen.has(definition.key)) throw conflict(MESSAGES.multipleValues);
      seen.add(definition.key);
    }
    const leaves = items.map((item) => checkValue(definitions.get(item.attribute)!.schema, item.value, item.attribute));
    // Each leaf is encrypted and indexed on the event loop: one request of a long list must not stall the vault.
    if (leaves.reduce((n, l) => n + l.length, 0) > MAX_STORE_LEAVES) throw tooLarge(MESSAGES.tooManyLeaves);
    const location = locate(input.request.origin ?? input.clientAddress);
    const requestedType = input.request.entityType ?? (input.form === 'datasubjects' ? DATASUBJECT : undefined);
    const reusableKey = dataKeys.reusable(input.entityId, wrapping);

    const { answer: stored, effects } = await this.deps.writes.transaction(async (trx) => {
      // Inside: the work may run twice (a shared transaction that rolled back, then alone).
      const effects: RuleEffects[] = [];
      const { entity } = await resolveForStore(trx, input.entityId, requestedType, { find: (db, id) => findStoreContext(db, id, reusableKey) });
      await confirmDefinitions(trx, definitions, this.deps.dialect);
      await requireRegulations(trx, this.deps.dialect, items.flatMap((i) => i.regulations ?? []));
      for (const definition of definitions.values()) if (!appliesTo(definition, entity.type)) throw badRequest(MESSAGES.notApplicable);
      const entityTags = entity.tags;

      const overwritten = await existingRoots(trx, entity.id, [...definitions.values()].filter((d) => !d.repeatable).map((d) => d.key));
      if (overwritten.size > 0 && entity.legalHold) throw forbidden(MESSAGES.legalHoldOverwrite);
      if (entity.storeProhibited || (overwritten.size > 0 && entity.updateProhibited)) throw forbidden(PROHIBITED_MESSAGE);

      const planned: Planned[] = items.map((item, i) => {
        const definition = definitions.get(item.attribute)!;
        const previous = overwritten.get(definition.key)?.[0];
        const rootId = previous?.id ?? newPointId();
        return {
          definition,
          input: item,
          leaves: leaves[i],
          rootId,
          replaces: previous,
          candidate: {
            attribute: definition.key,
            value: item.value,
            leaves: leaves[i],
            tags: new Set([...definition.tags, ...entityTags, ...(item.tags ?? [])]),
            regulations: new Set([...definition.regulations, ...(item.regulations ?? [])]),
            sensitivity: (item.sensitivity as string | null | undefined) ?? 'NORMAL',
            dataPointId: rootId,
          },
        };
      });

      const ruleEntity: RuleEntity = { id: entity.id, type: entity.type, tags: new Set(entityTags), legalHold: entity.legalHold };
      const requestPoints = planned.map((p) => p.candidate);
      const raised: Alert[] = [];
      for (const eventType of ['STORE', 'UPDATE'] as const) {
        const points = planned.filter((p) => (p.replaces ? 'UPDATE' : 'STORE') === eventType).map((p) => p.candidate);
        if (points.length === 0) continue;
        effects.push(await rules().evaluateData({ trx, caller, entity: ruleEntity, points, requestPoints, raised, location, eventType, reportOnly: false, rulesVersion: entity.rulesVersion }));
      }

      const now = nowIso();
      const dataKey = await dataKeys.forStore(trx, entity.id, wrapping, now, registered, { confirmed: entity.liveKeyId });
      await ensureTags(trx, planned.flatMap((p) => [...p.candidate.tags]));
      const oldRoots = [...overwritten.values()].flat().map((r) => r.id);
      if (oldRoots.length > 0) await deleteStructures(trx, oldRoots);

      const rows: DatapointsTable[] = [];
      const labels: Array<{ id: string; tags: Set<string>; regulations: Set<string> }> = [];
      const roots: DatapointsTable[] = [];
      for (const plan of planned) {
        const { definition, candidate, rootId } = plan;
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
          blind_index: definition.indexed && !structured ? blindIndex(this.deps.indexKey, definition.key, plan.leaves[0].value) : null,
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
            blind_index: definition.indexed ? blindIndex(this.deps.indexKey, leaf.attribute, leaf.value) : null,
            created_date: now,
          });
          labels.push({ id, tags: candidate.tags, regulations: candidate.regulations });
        }
      }
      const inserts = new InsertBatch(this.deps.dialect);
      inserts.add('datapoints', rows);
      inserts.add('datapoint_tags', labels.flatMap((l) => [...l.tags].map((tag) => ({ datapoint_id: l.id, tag }))));
      inserts.add('datapoint_regulations', labels.flatMap((l) => [...l.regulations].map((regulation) => ({ datapoint_id: l.id, regulation }))));
      await activity().append(
        trx,
        planned.map((plan, i) => pointRecord(caller, plan.replaces ? 'UPDATE' : 'STORE', roots[i], location, now)),
        inserts,
      );
      const labelsById = {
        tags: new Map(labels.map((l) => [l.id, [...l.tags].sort()])),
        regulations: new Map(labels.map((l) => [l.id, [...l.regulations].sort()])),
      };
      const answer = roots.map((row, i) => toDataPoint(row, labelsById, { value: planned[i].input.value }));
      await inserts.run(trx, { last: true });
      return { answer, effects };
    }, input.entityId);
    runAfterCommit(effects, (err) => this.deps.logger.error({ err }, 'rule effect failed after a store'));
    return stored;
  }
}

/** Existing vaulted root points of these (nonrepeatable) definitions, oldest first. */
async function existingRoots(trx: Kysely<Database>, entityId: string, keys: string[]): Promise<Map<string, Array<{ id: string; created_date: string }>>> {
  const out = new Map<string, Array<{ id: string; created_date: string }>>();
  if (keys.length === 0) return out;
  const rows = await trx
    .selectFrom('datapoints')
    .select(['id', 'attribute', 'created_date'])
    .where('entity_id', '=', entityId)
    .where('attribute', 'in', keys)
    .where('structure_root_id', 'is', null)
    .where('report_only', '=', VAULTED)
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
