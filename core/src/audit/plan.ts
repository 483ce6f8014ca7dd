/**
 * What each event of a batch does to the report-only points, decided in order so that later
 * events see earlier ones: a STORE registers a point, a READ, UPDATE or DELETE acts on a
 * point the vault knows, and one about a point it has never seen registers that point first
 * (report-only registration), so services whose data predates the vault lose no event.
 *
 * A point id with a control character is refused only where the id would be new (a STORE of
 * a point not there, a registration): points stored under one before such ids were refused
 * are still reported on, and a resent STORE of one is still accepted unchanged.
 */
import { canAccessAttribute, type Caller } from '../access/caller.js';
import { newPointId } from '../datapoints/ids.js';
import { MESSAGES } from '../datapoints/plane.js';
import { appliesTo, type Definition } from '../definitions/repository.js';
import { checkValue, isStructured, type Leaf, type Schema, type ValueErrorStatuses } from '../definitions/schema.js';
import { badRequest, conflict, forbidden, notFound, tooLarge } from '../errors.js';
import type { CandidatePoint, RuleEntity } from '../rules/engine.js';
import { canRegister, checkPlainText, checkSensitivity, type ActivitySummary, type AuditMode, type ParsedEvent } from './events.js';
import type { BatchPoints, NewPoint, PointView, RuleTarget } from './points.js';

export interface BatchEntity extends RuleEntity {
  inDb: boolean;
}

/** What the rules see and what is written for one accepted event. */
export interface PlannedEvent {
  index: number;
  parsed: ParsedEvent;
  summary: ActivitySummary;
  entityId: string;
  /** Present when the event carries a value for a STORE or UPDATE. */
  candidate?: CandidatePoint;
  /** Where the rules' changes to the candidate go. */
  applyTo?: RuleTarget;
}

/** What the batch loaded before planning. */
export interface PlanContext {
  caller: Caller;
  mode: AuditMode;
  statuses: ValueErrorStatuses;
  points: BatchPoints;
  definitions: ReadonlyMap<string, Definition>;
  knownRegulations: ReadonlySet<string>;
  /** The subject, loaded or to be created. */
  entity(id: string): BatchEntity;
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

/** A registration's checks and what the new point carries, before anything is created. */
interface Registration {
  definition: Definition;
  subjectId: string;
  attribute: string;
  sensitivity: string;
  tags: Set<string>;
  regulations: Set<string>;
  leaves: Leaf[];
}

/** As many values as a bulk may have events, however they are nested: each leaf is a point and a rule candidate. */
export const MAX_AUDIT_LEAVES = 50_000;
export const TOO_MANY_AUDIT_LEAVES = 'Audit events may carry at most 50000 values in one request, each leaf of a structured value counted';

export class EventPlanner {
  private leafCount = 0;

  constructor(private readonly ctx: PlanContext) {}

  /** The leaves of a value an event carries, counted against the request's budget. */
  private leavesOf(schema: Schema, value: unknown, attribute: string): Leaf[] {
    const leaves = checkValue(schema, value, attribute, this.ctx.statuses);
    this.leafCount += leaves.length;
    if (this.leafCount > MAX_AUDIT_LEAVES) throw tooLarge(TOO_MANY_AUDIT_LEAVES);
    return leaves;
  }

  plan(index: number, e: ParsedEvent): PlannedEvent {
    if (e.eventType === 'STORE') return this.planStore(index, e);
    const point = this.ctx.points.current(e.dataPointId!);
    if (point) return this.planKnown(index, e, point);
    if (canRegister(e)) return this.planUnseen(index, e);
    throw notFound('Data Not Found');
  }

  /**
   * The checks a STORE makes, in its order: the attribute exists (400), the caller may use
   * it (403), the regulations exist (400), the value fits the schema, the subject's type may
   * hold the attribute (400).
   */
  private registration(e: ParsedEvent): Registration {
    const attribute = e.attribute!;
    const subjectId = e.subjectId!;
    const definition = this.ctx.definitions.get(attribute);
    if (!definition) throw badRequest('No such attribute');
    if (!canAccessAttribute(this.ctx.caller, attribute)) throw forbidden('Forbidden access to attribute');
    for (const r of e.regulations) if (!this.ctx.knownRegulations.has(r)) throw badRequest('No such regulation');
    const sensitivity = checkSensitivity(e.sensitivity);
    const leaves: Leaf[] = e.value === undefined ? [] : this.leavesOf(definition.schema, e.value, attribute);
    const entity = this.ctx.entity(subjectId);
    if (!appliesTo(definition, entity.type)) throw badRequest(MESSAGES.notApplicable);
    return {
      definition,
      subjectId,
      attribute,
      sensitivity,
      tags: new Set([...definition.tags, ...entity.tags, ...e.tags]),
      regulations: new Set([...definition.regulations, ...e.regulations]),
      leaves,
    };
  }

  private register(id: string, r: Registration, e: ParsedEvent): NewPoint {
    return this.ctx.points.create({
      id,
      entityId: r.subjectId,
      attribute: r.attribute,
      definitionKey: r.attribute,
      root: null,
      sensitivity: r.sensitivity,
      timestamp: e.timestamp,
      location: e.location,
      tags: r.tags,
      regulations: r.regulations,
    });
  }

  private candidate(id: string, r: Registration, e: ParsedEvent): CandidatePoint | undefined {
    if (e.value === undefined) return undefined;
    return { attribute: r.attribute, value: e.value, leaves: r.leaves, tags: r.tags, regulations: r.regulations, sensitivity: r.sensitivity, dataPointId: id };
  }

  private planStore(index: number, e: ParsedEvent): PlannedEvent {
    const existing = e.dataPointId === undefined ? undefined : this.ctx.points.current(e.dataPointId);
    if (!existing) checkPlainText('dataPointId', e.dataPointId);
    const r = this.registration(e);
    const { subjectId, attribute } = r;
    const id = e.dataPointId ?? newPointId();
    const candidate = this.candidate(id, r, e);
    if (existing) {
      if (this.ctx.mode === 'single') throw conflict('Cannot create data point with ID, as there is already a point with that ID');
      const same = existing.entityId === subjectId && existing.attribute === attribute && existing.reportOnly;
      if (!same) throw conflict('Data point ID is in use');
      // A resent STORE: the point stays as it is; the event is still recorded. Its summary is
      // the point's as the first STORE gave it, sub-points included: a sender that keeps them
      // must not lose them to a redelivery.
      const summary: ActivitySummary = { eventType: 'STORE', dataPointId: id, subjectId, attribute };
      const subPoints = this.ctx.points.subPointsOf(id);
      if (subPoints.length > 0) summary.subPoints = subPoints;
      return { index, parsed: e, entityId: subjectId, summary, candidate, applyTo: { kind: 'none' } };
    }
    const point = this.register(id, r, e);
    const summary: ActivitySummary = { eventType: 'STORE', dataPointId: id, subjectId, attribute };
    if (isStructured(r.definition.schema) && r.leaves.length > 0) {
      summary.subPoints = r.leaves.map((leaf) => {
        const child = this.ctx.points.create({
          id: newPointId(),
          entityId: subjectId,
          attribute: leaf.attribute,
          definitionKey: attribute,
          root: id,
          sensitivity: r.sensitivity,
          timestamp: e.timestamp,
          location: e.location,
          tags: r.tags,
          regulations: r.regulations,
        });
        point.children.push(child.id);
        return { attribute: leaf.attribute, dataPointId: child.id };
      });
    }
    return { index, parsed: e, entityId: subjectId, summary, candidate, applyTo: { kind: 'new', point } };
  }

  /** READ, UPDATE and DELETE of a report-only point this vault knows. */
  private planKnown(index: number, e: ParsedEvent, point: PointView): PlannedEvent {
    const id = point.id;
    // A vaulted point is not the audit endpoints' to report on, nor to reveal.
    if (!point.reportOnly) throw notFound('Data Not Found');
    if (!canAccessAttribute(this.ctx.caller, point.attribute)) throw forbidden();
    const summary: ActivitySummary = { eventType: e.eventType, dataPointId: id, subjectId: point.entityId, attribute: point.attribute };
    const plan: PlannedEvent = { index, parsed: e, entityId: point.entityId, summary };

    // An UPDATE (as the interface says) and a DELETE (which removes the point) must be about the
    // point the sender means: naming another subject or attribute is a mix-up to refuse, not a
    // reason to change or delete another subject's point. A READ is recorded against the point.
    if (e.eventType === 'UPDATE' || e.eventType === 'DELETE') {
      if (e.attribute !== undefined && e.attribute !== point.attribute) {
        throw conflict('Attribute given for datapoint ID does not match attribute of existing point with that ID');
      }
      if (e.subjectId !== undefined && e.subjectId !== point.entityId) {
        throw conflict('Data subject ID given for datapoint ID does not match attribute of existing point with that ID');
      }
    }
    if (e.eventType === 'UPDATE') {
      const { target, meta } = this.ctx.points.touch(id, e.timestamp);
      if (e.value !== undefined) {
        const definition = this.ctx.definitions.get(point.definitionKey);
        const schema = definition && subSchema(definition.schema, point.attribute);
        const leaves = schema === undefined ? [] : this.leavesOf(schema, e.value, point.attribute);
        plan.candidate = {
          attribute: point.definitionKey,
          value: e.value,
          leaves,
          tags: new Set(meta.tags),
          regulations: new Set(meta.regulations),
          sensitivity: point.sensitivity,
          dataPointId: id,
        };
        plan.applyTo = target;
      }
    } else if (e.eventType === 'DELETE') {
      // Under a legal hold nothing of the subject's leaves the vault, the report-only point
      // included; the DELETE is still recorded: refusing it would lose the evidence that the
      // data was deleted elsewhere despite the hold.
      if (!this.ctx.entity(point.entityId).legalHold) this.ctx.points.remove(id);
    }
    return plan;
  }

  /**
   * A READ, UPDATE or DELETE of a point the vault has never seen, naming its subject and
   * attribute: the point is registered as a STORE without a value would register it (with
   * the same checks), an UPDATE's value goes to the data rules as a STORE's does, and a
   * DELETE leaves no point behind. Later events of the batch find the point.
   */
  private planUnseen(index: number, e: ParsedEvent): PlannedEvent {
    const id = checkPlainText('dataPointId', e.dataPointId!);
    const r = this.registration(e);
    const summary: ActivitySummary = { eventType: e.eventType, dataPointId: id, subjectId: r.subjectId, attribute: r.attribute };
    const plan: PlannedEvent = { index, parsed: e, entityId: r.subjectId, summary };
    if (e.eventType === 'DELETE') return plan;
    const point = this.register(id, r, e);
    if (e.eventType === 'UPDATE' && e.value !== undefined) {
      plan.candidate = this.candidate(id, r, e);
      plan.applyTo = { kind: 'new', point };
    }
    return plan;
  }
}
