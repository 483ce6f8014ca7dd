/**
 * One transaction's worth of audit events, single or bulk: every event is validated first
 * (the first failing one is reported, with its index in a bulk), then the rules run in
 * order, then everything is written in batches and appended to the activity log.
 */
import type { Kysely } from 'kysely';
import type { Caller } from '../access/caller.js';
import type { ActivityLog, ActivityRecord } from '../activity/log.js';
import type { Alert } from '../alerts/service.js';
import { ActivityService } from '../activity/service.js';
import { chunks } from '../db/insert-rows.js';
import type { Database } from '../db/schema.js';
import { dialectOf } from '../db/dialect.js';
import { findDefinitions, type Definition } from '../definitions/repository.js';
import { ENTITY_ID_MESSAGE } from '../entities/service.js';
import { badRequest, conflict, forbidden, VaultError } from '../errors.js';
import { storedTagsAmong, TAG_NAME_MESSAGE } from '../tags/service.js';
import { hasControlCharacter } from '../util/characters.js';
import type { RuleEffects, RulesEngine } from '../rules/engine.js';
import { nowIso } from '../util/time.js';
import { batchClock, BLOCKED, canRegister, checkPlainText, parseEvent, VALUE_STATUSES, type ActivitySummary, type AuditEventInput, type AuditMode, type ParsedEvent } from './events.js';
import { EventPlanner, type BatchEntity, type PlannedEvent } from './plan.js';
import { BatchPoints } from './points.js';

const CHUNK = 400;

export interface BatchCollaborators {
  rules: RulesEngine;
  activity: ActivityLog;
}

function withIndex(err: unknown, index: number | undefined): unknown {
  if (index === undefined || !(err instanceof VaultError)) return err;
  return new VaultError(err.status, err.message, { ...err.details, index });
}

export class AuditBatch {
  readonly effects: RuleEffects[] = [];
  /** Alerts the batch's rules raised: a block rolls the batch back, and records them on its own. */
  private readonly raised: Alert[] = [];
  private readonly clock = batchClock();
  private readonly answered = new Map<string, unknown>();
  private readonly definitions = new Map<string, Definition>();
  private readonly entities = new Map<string, BatchEntity>();
  private readonly knownRegulations = new Set<string>();
  /** Tags named with a control character that exist (stored by an earlier release). */
  private readonly storedLegacyTags = new Set<string>();
  private readonly points: BatchPoints;

  constructor(
    private readonly trx: Kysely<Database>,
    private readonly use: BatchCollaborators,
    private readonly caller: Caller,
    private readonly events: AuditEventInput[],
    private readonly mode: AuditMode,
  ) {
    this.points = new BatchPoints(trx);
  }

  private indexOf(i: number): number | undefined {
    return this.mode === 'bulk' ? i : undefined;
  }

  async run(): Promise<ActivitySummary[]> {
    // Field errors are kept, not thrown, so that the first failing event is the one reported.
    const parsed: Array<ParsedEvent | VaultError> = this.events.map((event) => {
      try {
        return parseEvent(event ?? {}, this.clock);
      } catch (err) {
        if (err instanceof VaultError) return err;
        throw err;
      }
    });
    const ok = parsed.filter((p): p is ParsedEvent => !(p instanceof VaultError));
    const eventIds = ok.flatMap((p) => (p.eventId === undefined ? [] : [p.eventId]));
    for (const [id, summary] of await ActivityService.findSummaries(this.trx, this.caller.applicationId, eventIds)) {
      this.answered.set(id, summary);
    }
    await this.load(ok.filter((p) => p.eventId === undefined || !this.answered.has(p.eventId)));

    const planner = new EventPlanner({
      caller: this.caller,
      mode: this.mode,
      statuses: VALUE_STATUSES[this.mode],
      points: this.points,
      definitions: this.definitions,
      knownRegulations: this.knownRegulations,
      entity: (id) => this.entity(id),
    });
    const summaries: ActivitySummary[] = [];
    const planned: PlannedEvent[] = [];
    for (let i = 0; i < parsed.length; i++) {
      const p = parsed[i];
      const earlier = p instanceof VaultError || p.eventId === undefined ? undefined : this.answered.get(p.eventId);
      if (earlier !== undefined) {
        if (earlier === null) throw withIndex(conflict('Event ID is already used by another record'), this.indexOf(i));
        summaries.push(earlier as ActivitySummary);
        continue;
      }
      try {
        if (p instanceof VaultError) throw p;
        // Only here, past the ids already recorded: a retry of an event recorded before such
        // ids were refused is answered as before, as any retry is.
        checkPlainText('eventId', p.eventId);
        this.checkLegacyNames(p);
        const plan = planner.plan(i, p);
        planned.push(plan);
        summaries.push(plan.summary);
        if (p.eventId !== undefined) this.answered.set(p.eventId, plan.summary);
      } catch (err) {
        throw withIndex(err, this.indexOf(i));
      }
    }
    if (planned.length === 0) return summaries;

    await this.insertEntities();
    for (const plan of planned) {
      try {
        await this.evaluateRules(plan);
      } catch (err) {
        throw withIndex(err, this.indexOf(plan.index));
      }
    }
    await this.points.write();
    await this.use.activity.append(this.trx, planned.map((plan) => this.record(plan)));
    return summaries;
  }

  /** Everything the events refer to, in a few batched queries. */
  private async load(events: ParsedEvent[]): Promise<void> {
    const pointIds = new Set<string>();
    const subjectIds = new Set<string>();
    const attributes = new Set<string>();
    const regulations = new Set<string>();
    const legacyTags = new Set<string>();
    const updatedWithValue = new Set<string>();
    const storedWithId = new Set<string>();
    for (const e of events) {
      if (e.dataPointId !== undefined) pointIds.add(e.dataPointId);
      if (e.subjectId !== undefined) subjectIds.add(e.subjectId);
      for (const tag of e.legacyTags) legacyTags.add(tag);
      // What registering a point needs, whether or not the point turns out to be known.
      if (e.eventType === 'STORE' || canRegister(e)) {
        attributes.add(e.attribute!);
        for (const r of e.regulations) regulations.add(r);
      }
      if (e.eventType === 'UPDATE' && e.value !== undefined) updatedWithValue.add(e.dataPointId!);
      if (e.eventType === 'STORE' && e.dataPointId !== undefined) storedWithId.add(e.dataPointId);
    }
    const loaded = await this.points.load(
      pointIds,
      (p) => updatedWithValue.has(p.id),
      (p) => storedWithId.has(p.id),
    );
    for (const point of loaded) {
      subjectIds.add(point.entityId);
      attributes.add(point.definitionKey);
    }
    for (const chunk of chunks([...subjectIds], CHUNK)) {
      const [rows, tags] = await Promise.all([
        this.trx.selectFrom('entities').select(['id', 'type', 'legal_hold']).where('id', 'in', chunk).execute(),
        this.trx.selectFrom('entity_tags').selectAll().where('entity_id', 'in', chunk).execute(),
      ]);
      for (const row of rows) {
        this.entities.set(row.id, { id: row.id, type: row.type, tags: new Set(), legalHold: Number(row.legal_hold) === 1, inDb: true });
      }
      for (const t of tags) this.entities.get(t.entity_id)?.tags.add(t.tag);
    }
    for (const chunk of chunks([...attributes], CHUNK)) {
      for (const [key, definition] of await findDefinitions(this.trx, chunk)) this.definitions.set(key, definition);
    }
    for (const d of this.definitions.values()) for (const r of d.regulations) regulations.delete(r);
    for (const chunk of chunks([...regulations], CHUNK)) {
      // Held on PostgreSQL, as a store holds them (`requireRegulations`): a delete through another process cannot slip between.
      let query = this.trx.selectFrom('regulations').select('key').where('key', 'in', chunk);
      if (dialectOf(this.trx) === 'postgres') query = query.forShare();
      const rows = await query.execute();
      for (const row of rows) this.knownRegulations.add(row.key);
    }
    for (const d of this.definitions.values()) for (const r of d.regulations) this.knownRegulations.add(r);
    for (const chunk of chunks([...legacyTags], CHUNK)) {
      for (const name of await storedTagsAmong(this.trx, chunk)) this.storedLegacyTags.add(name);
    }
  }

  /**
   * A subject id or tag name with a control character refers to what an earlier release
   * stored, which keeps being reported on; it may not name a new subject or tag.
   */
  private checkLegacyNames(e: ParsedEvent): void {
    if (e.subjectId !== undefined && hasControlCharacter(e.subjectId) && !this.entities.get(e.subjectId)?.inDb) throw badRequest(ENTITY_ID_MESSAGE);
    for (const tag of e.legacyTags) if (!this.storedLegacyTags.has(tag)) throw badRequest(TAG_NAME_MESSAGE);
  }

  private entity(id: string): BatchEntity {
    let entity = this.entities.get(id);
    if (!entity) {
      entity = { id, type: 'datasubject', tags: new Set(), legalHold: false, inDb: false };
      this.entities.set(id, entity);
    }
    return entity;
  }

  private async insertEntities(): Promise<void> {
    const now = nowIso();
    const fresh = [...this.entities.values()].filter((e) => !e.inDb).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const chunk of chunks(fresh, CHUNK)) {
      await this.trx
        .insertInto('entities')
        .values(chunk.map((e) => ({ id: e.id, type: e.type, legal_hold: 0 as const, created_date: now, updated_date: now })))
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    }
    for (const e of fresh) e.inDb = true;
  }

  private async evaluateRules(plan: PlannedEvent): Promise<void> {
    const e = plan.parsed;
    const entity = this.entities.get(plan.entityId);
    try {
      if (plan.candidate) {
        this.points.refreshCandidate(plan.applyTo, plan.candidate);
        this.effects.push(
          await this.use.rules.evaluateData({
            trx: this.trx,
            caller: this.caller,
            entity: entity ?? { id: plan.entityId, type: 'datasubject', tags: new Set(), legalHold: false },
            points: [plan.candidate],
            location: e.location,
            eventType: e.eventType === 'STORE' ? 'STORE' : 'UPDATE',
            reportOnly: true,
            raised: this.raised,
          }),
        );
        this.points.applyRuleChanges(plan.applyTo, plan.candidate);
      }
      this.effects.push(
        await this.use.rules.evaluateActivity({
          trx: this.trx,
          caller: this.caller,
          event: {
            eventType: e.eventType,
            subjectId: plan.summary.subjectId,
            dataPointId: plan.summary.dataPointId,
            attribute: plan.summary.attribute,
            applicationId: e.applicationId,
            applicationUser: e.applicationUser,
            location: e.location,
            timestamp: e.timestamp,
          },
          entity,
          raised: this.raised,
          tagPoint: (tag, status) => {
            if (plan.summary.dataPointId !== undefined) this.points.retag(plan.summary.dataPointId, tag, status);
          },
        }),
      );
    } catch (err) {
      // Whatever the block's own message, an audit event is refused with the interface's text.
      if (err instanceof VaultError && err.status === 403) throw forbidden(BLOCKED);
      throw err;
    }
  }

  private record(plan: PlannedEvent): ActivityRecord {
    const e = plan.parsed;
    return {
      eventType: e.eventType,
      eventId: e.eventId,
      subjectId: plan.summary.subjectId,
      dataPointId: plan.summary.dataPointId,
      attribute: plan.summary.attribute,
      applicationId: e.applicationId,
      applicationUser: e.applicationUser,
      dataStoreName: e.dataStoreName,
      dataStoreServer: e.dataStoreServer,
      dataStoreEntityName: e.dataStoreEntityName,
      location: e.location,
      reportOnly: true,
      timestamp: e.timestamp,
      recordedBy: this.caller.applicationId,
      summary: plan.summary,
    };
  }
}
