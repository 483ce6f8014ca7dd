/**
 * Deleting values: one attribute, one point (a sub-point takes its whole structure), or a
 * whole subject (purge: its wrapped data keys are destroyed with it). Each delete writes its
 * DELETE records in the same transaction.
 */
import type { Kysely } from 'kysely';
import { canAccessAttribute, type Caller } from '../access/caller.js';
import { committed } from '../db/after-commit.js';
import type { Database } from '../db/schema.js';
import { DATASUBJECT } from '../entitytypes/service.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import { chunks } from '../db/insert-rows.js';
import { nowIso } from '../util/time.js';
import { changeRecord } from '../activity/changes.js';
import { deleteStructures, lockEntity, MESSAGES, pointRecord, type DataPlaneDeps, type PathForm } from './plane.js';
import { holdTagsAgainstDelete } from '../tags/repository.js';

export class DataPointDeleter {
  constructor(private readonly deps: DataPlaneDeps) {}

  /** `DELETE .../{entityId}/attributes/{attributeKey}`: every value of the attribute. */
  async deleteAttribute(caller: Caller, input: { entityId: string; attributeKey: string; form: PathForm }): Promise<void> {
    if (!canAccessAttribute(caller, input.attributeKey)) throw forbidden();
    await committed(this.deps.db, async (trx) => {
      const entity = await lockEntity(trx, this.deps.dialect, input.entityId);
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
      await this.deps.rules().checkProhibited(trx, entity.id, 'DELETE');
      await this.deleteRootsAndRecord(trx, caller, [...new Set(matched.map((r) => r.structure_root_id ?? r.id))]);
    });
  }

  /**
   * `DELETE /data/{dataPointId}`. A sub-point is a view of part of its root's value, so
   * deleting one deletes the whole structured value: nothing of it stays readable. A point
   * the caller may not access is answered like an unknown id.
   */
  async deletePoint(caller: Caller, dataPointId: string): Promise<void> {
    await committed(this.deps.db, async (trx) => {
      const row = await trx.selectFrom('datapoints').select(['id', 'entity_id', 'attribute', 'structure_root_id']).where('id', '=', dataPointId).executeTakeFirst();
      if (!row || !canAccessAttribute(caller, row.attribute)) throw notFound(MESSAGES.dataNotFound);
      const entity = await lockEntity(trx, this.deps.dialect, row.entity_id);
      if (entity?.legal_hold === 1) throw forbidden(MESSAGES.legalHoldDelete);
      await this.deps.rules().checkProhibited(trx, row.entity_id, 'DELETE');
      await this.deleteRootsAndRecord(trx, caller, [row.structure_root_id ?? row.id]);
    });
  }

  /**
   * `DELETE /datasubjects/{id}/data` and `/entities/{id}/data`: every point, the subject's
   * wrapped data keys (crypto-shredding: its ciphertext in any backup is now unreadable) and
   * the entity itself. The activity history stays.
   */
  async purge(caller: Caller, input: { entityId: string; form: PathForm }): Promise<void> {
    const { dataKeys } = this.deps;
    await committed(this.deps.db, async (trx) => {
      const entity = await lockEntity(trx, this.deps.dialect, input.entityId);
      if (!entity) throw notFound(MESSAGES.subjectNotFound);
      if (input.form === 'datasubjects' && entity.type !== DATASUBJECT) throw badRequest(MESSAGES.notOfTypeDataSubject);
      if (caller.attributes !== '*') {
        const keys = await trx.selectFrom('datapoints').select('definition_key').distinct().where('entity_id', '=', entity.id).execute();
        if (keys.some((k) => !canAccessAttribute(caller, k.definition_key))) throw forbidden();
      }
      if (entity.legal_hold === 1) throw forbidden(MESSAGES.legalHoldDelete);
      await this.deps.rules().checkProhibited(trx, entity.id, 'DELETE');
      const roots = await trx
        .selectFrom('datapoints')
        .select(['id', 'entity_id', 'attribute', 'report_only'])
        .where('entity_id', '=', entity.id)
        .where('structure_root_id', 'is', null)
        .orderBy('created_date')
        .orderBy('id')
        .execute();
      const ofEntity = trx.selectFrom('datapoints').select('id').where('entity_id', '=', entity.id);
      // Its points' labels, then its own tags: a tag's delete takes them the other way round.
      await holdTagsAgainstDelete(trx);
      await trx.deleteFrom('datapoint_tags').where('datapoint_id', 'in', ofEntity).execute();
      await trx.deleteFrom('datapoint_regulations').where('datapoint_id', 'in', ofEntity).execute();
      await trx.deleteFrom('datapoints').where('entity_id', '=', entity.id).execute();
      // The keys before their copies: on PostgreSQL a rewrap batch holds the keys it copies
      // until it commits (`DataKeys.rewrap`), so this waits for it and the copies it made are
      // then deleted too.
      const keys = await trx.deleteFrom('subject_keys').where('entity_id', '=', entity.id).returning('id').execute();
      for (const ids of chunks(keys.map((k) => k.id), 500)) await trx.deleteFrom('subject_key_wraps').where('subject_key_id', 'in', ids).execute();
      await trx.deleteFrom('entity_tags').where('entity_id', '=', entity.id).execute();
      // Rule state about the subject goes with it: a new subject reusing the id starts clean.
      await trx.deleteFrom('entity_prohibitions').where('entity_id', '=', entity.id).execute();
      await trx.deleteFrom('idle_retention').where('entity_id', '=', entity.id).execute();
      await trx.deleteFrom('entities').where('id', '=', entity.id).execute();
      dataKeys.evictEntity(entity.id);
      const now = nowIso();
      // After its points' DELETEs, the subject's own end: the proof of an erasure, even of a subject that held no value.
      const erased = changeRecord(caller, { target: 'entity', id: entity.id, action: 'delete', fields: { type: entity.type, values: roots.length } }, now);
      await this.deps.activity().append(trx, [...roots.map((r) => pointRecord(caller, 'DELETE', r, undefined, now)), erased]);
    });
    // Again after commit: a read between the eviction and the commit may have cached a key.
    dataKeys.evictEntity(input.entityId);
  }

  private async deleteRootsAndRecord(trx: Kysely<Database>, caller: Caller, rootIds: string[]): Promise<void> {
    const roots = await trx.selectFrom('datapoints').select(['id', 'entity_id', 'attribute', 'report_only']).where('id', 'in', rootIds).orderBy('created_date').orderBy('id').execute();
    await deleteStructures(trx, rootIds);
    const now = nowIso();
    await this.deps.activity().append(
      trx,
      roots.map((r) => pointRecord(caller, 'DELETE', r, undefined, now)),
    );
  }
}
