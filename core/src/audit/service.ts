/**
 * Report-only audit events: activity on data that lives in other systems. Each event is
 * checked, run past the rules, reflected on a report-only data point (no value is ever
 * kept) and appended to the activity log. A bulk is one transaction: every event is
 * validated first, then the rules run in order, then everything is written in batches.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { canAccessAttribute, type Caller } from '../access/caller.js';
import type { ActivityRecord } from '../activity/log.js';
import { ActivityService, chunks } from '../activity/service.js';
import { isUniqueViolation } from '../db/dialect.js';
import type { Database, DatapointsTable } from '../db/schema.js';
import { findDefinitions, type Definition } from '../definitions/repository.js';
import { checkValue, isStructured, type Leaf, type Schema, type ValueErrorStatuses } from '../definitions/schema.js';
import { badRequest, conflict, forbidden, notFound, VaultError } from '../errors.js';
import { ensureTags } from '../tags/repository.js';
import {
  runAfterCommit,
  type CandidatePoint,
  type EventType,
  type Location,
  type RuleEffects,
  type RuleEntity,
} from '../rules/engine.js';
import { nowIso, parseIsoDate } from '../util/time.js';
import type { Vault } from '../vault.js';

export const EVENT_TYPES: readonly EventType[] = ['READ', 'STORE', 'UPDATE', 'DELETE'];
export const SENSITIVITIES = ['NORMAL', 'PERSONAL', 'SENSITIVE', 'CONFIDENTIAL'] as const;
export const MAX_BULK_EVENTS = 50_000;
const FUTURE_TOLERANCE_MS = 24 * 60 * 60 * 1000;
const CHUNK = 400;
const MAX_ATTEMPTS = 4;

export const BLOCKED = 'The provided data could not be stored, as a rule disallows it';

/** The interface's statuses for value errors differ between the two endpoints. */
const SINGLE_VALUE_STATUSES: ValueErrorStatuses = { mismatch: 422, unknownSubAttribute: 422 };
const BULK_VALUE_STATUSES: ValueErrorStatuses = { mismatch: 400, unknownSubAttribute: 400 };

export type AuditMode = 'single' | 'bulk';

export interface AuditEventInput {
  eventType?: unknown;
  eventId?: string | null;
  dataPointId?: string | null;
  subjectId?: string | null;
  data?: {
    attribute?: string | null;
    value?: unknown;
    dataPointId?: string | null;
    regulations?: string[] | null;
    tags?: string[] | null;
    sensitivity?: string | null;
    reportOnly?: boolean | null;
    accessibility?: string | null;
  } | null;
  timestamp?: string | number | null;
  applicationId?: string | null;
  applicationUser?: string | null;
  dataStoreName?: string | null;
  dataStoreServer?: string | null;
  dataStoreEntityName?: string | null;
  location?: { country?: string | null; subdivision?: string | null; city?: string | null } | null;
}

export interface SubPointSummary {
  attribute: string;
  dataPointId: string;
}

/** The answer per event, returned without the `data` wrapper. */
export interface ActivitySummary {
  eventType: EventType;
  dataPointId: string;
  subjectId: string;
  attribute: string;
  subPoints?: SubPointSummary[];
}

interface ParsedEvent {
  eventType: EventType;
  eventId?: string;
  dataPointId?: string;
  subjectId?: string;
  attribute?: string;
  /** Undefined when the event carries none. */
  value?: unknown;
  tags: string[];
  regulations: string[];
  sensitivity?: string;
  timestamp: string;
  applicationId: string;
  applicationUser?: string;
  dataStoreName?: string;
  dataStoreServer?: string;
  dataStoreEntityName?: string;
  location?: Location;
}

/** A point as this batch sees it: loaded from the database or created by an earlier event. */
interface PointView {
  id: string;
  entityId: string;
  attribute: string;
  definitionKey: string;
  structureRootId: string | null;
  reportOnly: boolean;
  sensitivity: string;
}

interface NewPoint extends PointView {
  row: DatapointsTable;
  tags: Set<string>;
  regulations: Set<string>;
  children: string[];
}

interface DbUpdate {
  modified: string;
  tags: Set<string>;
  regulations: Set<string>;
  expiresAt?: string;
  autoDelete?: boolean;
}

interface BatchEntity extends RuleEntity {
  inDb: boolean;
}

/** What the rules see and what is written for one accepted event. */
interface PlannedEvent {
  index: number;
  parsed: ParsedEvent;
  summary: ActivitySummary;
  entityId: string;
  /** Present when the event carries a value for a STORE or UPDATE. */
  candidate?: CandidatePoint;
  /** Where the rules' changes to the candidate go. */
  applyTo?: { kind: 'new'; point: NewPoint } | { kind: 'db'; id: string } | { kind: 'none' };
}

function optionalText(value: string | null | undefined): string | undefined {
  return value === null || value === undefined || value === '' ? undefined : value;
}

function parseTimestamp(input: string | number | null | undefined, now: number): string {
  if (input === null || input === undefined || input === '') return new Date(now).toISOString();
  let iso: string | undefined;
  if (typeof input === 'number') {
    // Epoch milliseconds, as JSON serialisers of date objects often send them.
    const date = Number.isSafeInteger(input) ? new Date(input) : undefined;
    iso = date && !Number.isNaN(date.getTime()) ? date.toISOString() : undefined;
  } else {
    iso = parseIsoDate(input);
  }
  if (iso === undefined || !/^\d{4}-/.test(iso)) throw badRequest('Timestamp must be an ISO 8601 date-time');
  if (Date.parse(iso) > now + FUTURE_TOLERANCE_MS) throw badRequest('Timestamp out of range');
  return iso;
}

/** Field checks that need no database, in the order the interface's messages suggest. */
function parseEvent(input: AuditEventInput, now: number): ParsedEvent {
  const rawType = input.eventType;
  if (rawType === undefined || rawType === null || rawType === '') throw badRequest('Event type is required');
  if (typeof rawType !== 'string' || !(EVENT_TYPES as readonly string[]).includes(rawType)) throw badRequest('Unrecognized event type');
  const eventType = rawType as EventType;
  const data = input.data ?? undefined;
  const dataPointId = optionalText(input.dataPointId) ?? (eventType === 'STORE' ? optionalText(data?.dataPointId) : undefined);
  if (eventType !== 'STORE' && dataPointId === undefined) throw badRequest('Data point ID is required for events other than creation');
  const timestamp = parseTimestamp(input.timestamp, now);
  const applicationId = optionalText(input.applicationId);
  if (applicationId === undefined) throw badRequest('Application ID is required');
  const subjectId = optionalText(input.subjectId);
  const attribute = optionalText(data?.attribute);
  let sensitivity: string | undefined;
  if (eventType === 'STORE') {
    if (subjectId === undefined) throw badRequest('Data subject ID is required for creation');
    if (attribute === undefined) throw badRequest('Attribute is required for creation');
    const given = optionalText(data?.sensitivity);
    if (given !== undefined) {
      sensitivity = given.toUpperCase();
      if (!(SENSITIVITIES as readonly string[]).includes(sensitivity)) {
        throw badRequest(`Sensitivity must be one of ${SENSITIVITIES.join(', ')}`);
      }
    }
  }
  const location: Location = {};
  const country = optionalText(input.location?.country);
  const subdivision = optionalText(input.location?.subdivision);
  const city = optionalText(input.location?.city);
  if (country !== undefined) location.country = country.toUpperCase();
  if (subdivision !== undefined) location.subdivision = subdivision.toUpperCase();
  if (city !== undefined) location.city = city;
  return {
    eventType,
    eventId: optionalText(input.eventId),
    dataPointId,
    subjectId,
    attribute,
    value: data?.value === null ? undefined : data?.value,
    tags: [...new Set(data?.tags ?? [])].filter((t) => t !== ''),
    regulations: [...new Set(data?.regulations ?? [])].filter((r) => r !== ''),
    sensitivity,
    timestamp,
    applicationId,
    applicationUser: optionalText(input.applicationUser),
    dataStoreName: optionalText(input.dataStoreName),
    dataStoreServer: optionalText(input.dataStoreServer),
    dataStoreEntityName: optionalText(input.dataStoreEntityName),
    location: Object.keys(location).length > 0 ? location : undefined,
  };
}

/** The schema of `KEY.a.b` inside its definition's schema; a list's items for `[a]`. */
function subSchema(schema: Schema, attribute: string): Schema | undefined {
  const path = attribute.split('.').slice(1);
  let current: Schema = schema;
  for (const part of path) {
    if (!isStructured(current)) return undefined;
    const next: Schema | undefined = current[part] ?? current[`[${part}]`];
    if (next === undefined) return undefined;
    current = next;
  }
  return current;
}

function withIndex(err: unknown, index: number | undefined): unknown {
  if (index === undefined || !(err instanceof VaultError)) return err;
  return new VaultError(err.status, err.message, { ...err.details, index });
}

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return isUniqueViolation(err) || code === '40P01' || code === '40001' || code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT';
}

export class AuditService {
  constructor(private readonly vault: Vault) {}

  /**
   * Records one event (`single`) or a bulk. Concurrent requests that race on the same event
   * id or data point id lose to a unique constraint; the loser runs again and then sees the
   * winner's work (the repeated event id is answered from the log).
   */
  async record(caller: Caller, events: AuditEventInput[], mode: AuditMode): Promise<ActivitySummary[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        let effects: RuleEffects[] = [];
        const summaries = await this.vault.db.transaction().execute(async (trx) => {
          const batch = new AuditBatch(trx, this.vault, caller, events, mode);
          const result = await batch.run();
          effects = batch.effects;
          return result;
        });
        runAfterCommit(effects, (err) => this.vault.logger.error({ err }, 'a rule effect of an audit event failed'));
        return summaries;
      } catch (err) {
        if (!isRetryable(err)) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          this.vault.logger.warn({ code: (err as { code?: string }).code }, 'audit request kept conflicting with concurrent writes');
          throw new VaultError(503, 'The vault is busy with conflicting requests, retry the request');
        }
      }
    }
  }
}

/** One transaction's worth of events. */
class AuditBatch {
  readonly effects: RuleEffects[] = [];
  private readonly now = Date.now();
  private readonly statuses: ValueErrorStatuses;
  private readonly answered = new Map<string, unknown>();
  private readonly definitions = new Map<string, Definition>();
  private readonly dbPoints = new Map<string, PointView>();
  private readonly dbPointMeta = new Map<string, { tags: Set<string>; regulations: Set<string> }>();
  private readonly deletedFromDb = new Set<string>();
  private readonly newPoints = new Map<string, NewPoint>();
  private readonly dbUpdates = new Map<string, DbUpdate>();
  private readonly entities = new Map<string, BatchEntity>();
  private knownRegulations = new Set<string>();

  constructor(
    private readonly trx: Kysely<Database>,
    private readonly vault: Vault,
    private readonly caller: Caller,
    private readonly events: AuditEventInput[],
    private readonly mode: AuditMode,
  ) {
    this.statuses = mode === 'bulk' ? BULK_VALUE_STATUSES : SINGLE_VALUE_STATUSES;
  }

  private indexOf(i: number): number | undefined {
    return this.mode === 'bulk' ? i : undefined;
  }

  async run(): Promise<ActivitySummary[]> {
    // Field errors are kept, not thrown, so that the first failing event is the one reported.
    const parsed: Array<ParsedEvent | VaultError> = this.events.map((event) => {
      try {
        return parseEvent(event ?? {}, this.now);
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
        const plan = this.plan(i, p);
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
    await this.write();
    await this.vault.activity.append(this.trx, planned.map((plan) => this.record(plan)));
    return summaries;
  }

  /** Everything the events refer to, in a few batched queries. */
  private async load(events: ParsedEvent[]): Promise<void> {
    const pointIds = new Set<string>();
    const subjectIds = new Set<string>();
    const attributes = new Set<string>();
    const regulations = new Set<string>();
    for (const e of events) {
      if (e.dataPointId !== undefined) pointIds.add(e.dataPointId);
      if (e.subjectId !== undefined) subjectIds.add(e.subjectId);
      if (e.eventType === 'STORE' && e.attribute !== undefined) attributes.add(e.attribute);
      if (e.eventType === 'STORE') for (const r of e.regulations) regulations.add(r);
    }
    for (const chunk of chunks([...pointIds], CHUNK)) {
      const rows = await this.trx
        .selectFrom('datapoints')
        .select(['id', 'entity_id', 'attribute', 'definition_key', 'structure_root_id', 'report_only', 'sensitivity'])
        .where('id', 'in', chunk)
        .execute();
      for (const row of rows) {
        this.dbPoints.set(row.id, {
          id: row.id,
          entityId: row.entity_id,
          attribute: row.attribute,
          definitionKey: row.definition_key,
          structureRootId: row.structure_root_id,
          reportOnly: Number(row.report_only) === 1,
          sensitivity: row.sensitivity,
        });
        subjectIds.add(row.entity_id);
        attributes.add(row.definition_key);
      }
    }
    const updated = events.filter((e) => e.eventType === 'UPDATE' && e.value !== undefined && this.dbPoints.has(e.dataPointId!));
    for (const chunk of chunks([...new Set(updated.map((e) => e.dataPointId!))], CHUNK)) {
      for (const id of chunk) this.dbPointMeta.set(id, { tags: new Set(), regulations: new Set() });
      const [tags, regs] = await Promise.all([
        this.trx.selectFrom('datapoint_tags').selectAll().where('datapoint_id', 'in', chunk).execute(),
        this.trx.selectFrom('datapoint_regulations').selectAll().where('datapoint_id', 'in', chunk).execute(),
      ]);
      for (const t of tags) this.dbPointMeta.get(t.datapoint_id)?.tags.add(t.tag);
      for (const r of regs) this.dbPointMeta.get(r.datapoint_id)?.regulations.add(r.regulation);
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
      const rows = await this.trx.selectFrom('regulations').select('key').where('key', 'in', chunk).execute();
      for (const row of rows) this.knownRegulations.add(row.key);
    }
    for (const d of this.definitions.values()) for (const r of d.regulations) this.knownRegulations.add(r);
  }

  /** The point under this id as of the events planned so far. */
  private current(id: string): PointView | undefined {
    const created = this.newPoints.get(id);
    if (created) return created;
    const row = this.dbPoints.get(id);
    if (!row || this.deletedFromDb.has(id)) return undefined;
    if (row.structureRootId !== null && this.deletedFromDb.has(row.structureRootId)) return undefined;
    return row;
  }

  private plan(index: number, e: ParsedEvent): PlannedEvent {
    return e.eventType === 'STORE' ? this.planStore(index, e) : this.planExisting(index, e);
  }

  private planStore(index: number, e: ParsedEvent): PlannedEvent {
    const attribute = e.attribute!;
    const subjectId = e.subjectId!;
    const definition = this.definitions.get(attribute);
    if (!definition) throw badRequest('No such attribute');
    if (!canAccessAttribute(this.caller, attribute)) throw forbidden('Forbidden access to attribute');
    for (const r of e.regulations) if (!this.knownRegulations.has(r)) throw badRequest('No such regulation');
    const leaves: Leaf[] = e.value === undefined ? [] : checkValue(definition.schema, e.value, attribute, this.statuses);

    const entity = this.entity(subjectId);
    const sensitivity = e.sensitivity ?? 'NORMAL';
    const tags = new Set([...definition.tags, ...entity.tags, ...e.tags]);
    const regulations = new Set([...definition.regulations, ...e.regulations]);
    const candidate: CandidatePoint | undefined =
      e.value === undefined ? undefined : { attribute, value: e.value, leaves, tags, regulations, sensitivity };

    const id = e.dataPointId ?? randomUUID();
    const existing = e.dataPointId === undefined ? undefined : this.current(id);
    if (existing) {
      if (this.mode === 'single') throw conflict('Cannot create data point with ID, as there is already a point with that ID');
      const same = existing.entityId === subjectId && existing.attribute === attribute && existing.reportOnly;
      if (!same) throw conflict('Data point ID is in use');
      // A resent STORE: the point stays as it is; the event is still recorded.
      return {
        index,
        parsed: e,
        entityId: subjectId,
        summary: { eventType: 'STORE', dataPointId: id, subjectId, attribute },
        candidate,
        applyTo: { kind: 'none' },
      };
    }
    // A DB row under this id that an earlier event of the batch deleted is replaced.
    const point = this.newPoint(id, subjectId, attribute, attribute, null, sensitivity, e, tags, regulations);
    const summary: ActivitySummary = { eventType: 'STORE', dataPointId: id, subjectId, attribute };
    if (isStructured(definition.schema) && leaves.length > 0) {
      summary.subPoints = leaves.map((leaf) => {
        const child = this.newPoint(randomUUID(), subjectId, leaf.attribute, attribute, id, sensitivity, e, tags, regulations);
        point.children.push(child.id);
        return { attribute: leaf.attribute, dataPointId: child.id };
      });
    }
    return { index, parsed: e, entityId: subjectId, summary, candidate, applyTo: { kind: 'new', point } };
  }

  private newPoint(
    id: string,
    entityId: string,
    attribute: string,
    definitionKey: string,
    root: string | null,
    sensitivity: string,
    e: ParsedEvent,
    tags: Set<string>,
    regulations: Set<string>,
  ): NewPoint {
    const point: NewPoint = {
      id,
      entityId,
      attribute,
      definitionKey,
      structureRootId: root,
      reportOnly: true,
      sensitivity,
      tags,
      regulations,
      children: [],
      row: {
        id,
        entity_id: entityId,
        attribute,
        definition_key: definitionKey,
        structure_root_id: root,
        report_only: 1,
        sensitivity,
        subject_key_id: null,
        ciphertext: null,
        blind_index: null,
        country: e.location?.country ?? null,
        subdivision: e.location?.subdivision ?? null,
        city: e.location?.city ?? null,
        expires_at: null,
        auto_delete: 0,
        created_date: e.timestamp,
        modified_date: e.timestamp,
      },
    };
    this.newPoints.set(id, point);
    return point;
  }

  private entity(id: string): BatchEntity {
    let entity = this.entities.get(id);
    if (!entity) {
      entity = { id, type: 'datasubject', tags: new Set(), legalHold: false, inDb: false };
      this.entities.set(id, entity);
    }
    return entity;
  }

  /** READ, UPDATE and DELETE name a report-only point this vault knows. */
  private planExisting(index: number, e: ParsedEvent): PlannedEvent {
    const id = e.dataPointId!;
    const point = this.current(id);
    if (!point || !point.reportOnly) throw notFound('Data Not Found');
    if (!canAccessAttribute(this.caller, point.attribute)) throw forbidden();
    const summary: ActivitySummary = { eventType: e.eventType, dataPointId: id, subjectId: point.entityId, attribute: point.attribute };
    const plan: PlannedEvent = { index, parsed: e, entityId: point.entityId, summary };

    if (e.eventType === 'UPDATE') {
      if (e.attribute !== undefined && e.attribute !== point.attribute) {
        throw conflict('Attribute given for datapoint ID does not match attribute of existing point with that ID');
      }
      if (e.subjectId !== undefined && e.subjectId !== point.entityId) {
        throw conflict('Data subject ID given for datapoint ID does not match attribute of existing point with that ID');
      }
      const created = this.newPoints.get(id);
      if (created) {
        if (e.timestamp > created.row.modified_date) created.row.modified_date = e.timestamp;
      } else {
        const update = this.dbUpdates.get(id) ?? { modified: e.timestamp, tags: new Set(), regulations: new Set() };
        if (e.timestamp > update.modified) update.modified = e.timestamp;
        this.dbUpdates.set(id, update);
      }
      if (e.value !== undefined) {
        const definition = this.definitions.get(point.definitionKey);
        const schema = definition && subSchema(definition.schema, point.attribute);
        const leaves = schema === undefined ? [] : checkValue(schema, e.value, point.attribute, this.statuses);
        const meta = created ?? this.dbPointMeta.get(id) ?? { tags: new Set<string>(), regulations: new Set<string>() };
        plan.candidate = {
          attribute: point.definitionKey,
          value: e.value,
          leaves,
          tags: new Set(meta.tags),
          regulations: new Set(meta.regulations),
          sensitivity: point.sensitivity,
        };
        plan.applyTo = created ? { kind: 'new', point: created } : { kind: 'db', id };
      }
    } else if (e.eventType === 'DELETE') {
      const created = this.newPoints.get(id);
      if (created) {
        for (const child of created.children) this.newPoints.delete(child);
        this.newPoints.delete(id);
      }
      // The row in the database (if any) goes too, even when this batch had replaced it.
      if (this.dbPoints.has(id)) this.deletedFromDb.add(id);
      this.dbUpdates.delete(id);
    }
    return plan;
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
        this.effects.push(
          await this.vault.rules.evaluateData({
            trx: this.trx,
            caller: this.caller,
            entity: entity ?? { id: plan.entityId, type: 'datasubject', tags: new Set(), legalHold: false },
            points: [plan.candidate],
            location: e.location,
            eventType: e.eventType === 'STORE' ? 'STORE' : 'UPDATE',
            reportOnly: true,
          }),
        );
        this.applyRuleChanges(plan);
      }
      this.effects.push(
        await this.vault.rules.evaluateActivity({
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
        }),
      );
    } catch (err) {
      // Whatever the block's own message, an audit event is refused with the interface's text.
      if (err instanceof VaultError && err.status === 403) throw forbidden(BLOCKED);
      throw err;
    }
  }

  /** Tags, regulations and retention that data rules put on the candidate reach the point. */
  private applyRuleChanges(plan: PlannedEvent): void {
    const candidate = plan.candidate!;
    const target = plan.applyTo;
    if (!target || target.kind === 'none') return;
    if (target.kind === 'new') {
      const point = target.point;
      for (const t of candidate.tags) point.tags.add(t);
      for (const r of candidate.regulations) point.regulations.add(r);
      const rows = [point, ...point.children.map((c) => this.newPoints.get(c)).filter((c): c is NewPoint => c !== undefined)];
      for (const p of rows) {
        if (candidate.expiresAt !== undefined) p.row.expires_at = candidate.expiresAt;
        if (candidate.autoDelete !== undefined) p.row.auto_delete = candidate.autoDelete ? 1 : 0;
      }
      return;
    }
    const update = this.dbUpdates.get(target.id);
    if (!update) return;
    for (const t of candidate.tags) update.tags.add(t);
    for (const r of candidate.regulations) update.regulations.add(r);
    if (candidate.expiresAt !== undefined) update.expiresAt = candidate.expiresAt;
    if (candidate.autoDelete !== undefined) update.autoDelete = candidate.autoDelete;
  }

  private async write(): Promise<void> {
    const trx = this.trx;
    for (const chunk of chunks([...this.deletedFromDb], CHUNK)) {
      const doomed = trx.selectFrom('datapoints').select('id').where((eb) => eb.or([eb('id', 'in', chunk), eb('structure_root_id', 'in', chunk)]));
      await trx.deleteFrom('datapoint_tags').where('datapoint_id', 'in', doomed).execute();
      await trx.deleteFrom('datapoint_regulations').where('datapoint_id', 'in', doomed).execute();
      await trx.deleteFrom('datapoints').where((eb) => eb.or([eb('id', 'in', chunk), eb('structure_root_id', 'in', chunk)])).execute();
    }

    const points = [...this.newPoints.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const tagRows: { datapoint_id: string; tag: string }[] = [];
    const regulationRows: { datapoint_id: string; regulation: string }[] = [];
    for (const p of points) {
      for (const tag of p.tags) tagRows.push({ datapoint_id: p.id, tag });
      for (const regulation of p.regulations) regulationRows.push({ datapoint_id: p.id, regulation });
    }
    const updates = [...this.dbUpdates].filter(([id]) => !this.deletedFromDb.has(id));
    for (const [id, u] of updates) {
      for (const tag of u.tags) tagRows.push({ datapoint_id: id, tag });
      for (const regulation of u.regulations) regulationRows.push({ datapoint_id: id, regulation });
    }
    for (const chunk of chunks([...new Set(tagRows.map((r) => r.tag))], CHUNK)) await ensureTags(trx, chunk);
    for (const chunk of chunks(points, CHUNK)) await trx.insertInto('datapoints').values(chunk.map((p) => p.row)).execute();
    for (const chunk of chunks(tagRows, CHUNK)) {
      await trx.insertInto('datapoint_tags').values(chunk).onConflict((oc) => oc.columns(['datapoint_id', 'tag']).doNothing()).execute();
    }
    for (const chunk of chunks(regulationRows, CHUNK)) {
      await trx
        .insertInto('datapoint_regulations')
        .values(chunk)
        .onConflict((oc) => oc.columns(['datapoint_id', 'regulation']).doNothing())
        .execute();
    }

    // One statement per distinct event time: reported events of one moment share it.
    const byTime = new Map<string, string[]>();
    for (const [id, u] of updates) byTime.set(u.modified, [...(byTime.get(u.modified) ?? []), id]);
    for (const [modified, ids] of byTime) {
      for (const chunk of chunks(ids, CHUNK)) {
        // A late-arriving older event does not move the modification date backwards.
        await trx.updateTable('datapoints').set({ modified_date: modified }).where('id', 'in', chunk).where('modified_date', '<', modified).execute();
      }
    }
    for (const [id, u] of updates) {
      if (u.expiresAt === undefined && u.autoDelete === undefined) continue;
      const retention: { expires_at?: string; auto_delete?: 0 | 1 } = {};
      if (u.expiresAt !== undefined) retention.expires_at = u.expiresAt;
      if (u.autoDelete !== undefined) retention.auto_delete = u.autoDelete ? 1 : 0;
      await trx.updateTable('datapoints').set(retention).where('id', '=', id).execute();
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
