/**
 * The rules engine the vault runs: data rules inside every store (and on the values audit
 * events report), activity rules on every audit event, and the prohibitions rules leave on
 * entities. Effects on the entity go through the caller's transaction; alerts are recorded
 * in it too and delivered once it has committed.
 */
import { compiledQuery } from '../db/compiled.js';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Alert, AlertService } from '../alerts/service.js';
import type { Database } from '../db/schema.js';
import { setEntityTags } from '../entities/repository.js';
import { forbidden } from '../errors.js';
import { ensureTags, holdTagsAgainstDelete } from '../tags/repository.js';
import { nowIso } from '../util/time.js';
import { recordChange, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { recheckIdleRetention } from './idle-retention.js';
import type { ActivityRuleContext, CandidatePoint, DataRuleContext, EventType, RuleEffects, RuleEntity, RulesEngine } from './engine.js';
import { matches, type Subject } from './match.js';
import type { ReferenceKind, StoredRule } from './model.js';
import { PROHIBITED_MESSAGE } from './prohibitions.js';
import type { RuleService } from './service.js';

const DAY_MS = 86_400_000;
/** The interface's text for a refusal: what a block says when it names no message of its own. */
const DEFAULT_BLOCK_MESSAGE = 'The provided data could not be stored, as a rule disallows it';

/** Entity changes collected during one evaluation and written once at its end. */
interface EntityChanges {
  tags: boolean;
  legalHold: boolean;
  /** The hold before the first rule that set it, and the last such rule: a hold a rule turns on or off is recorded. */
  heldBefore?: boolean;
  holdRule?: string;
  prohibitions: Map<EventType, { status: boolean; ruleKey: string }>;
}

function newChanges(): EntityChanges {
  return { tags: false, legalHold: false, prohibitions: new Map() };
}

/** Asked on every read and write: compiled once. */
const prohibition = compiledQuery<[string, string], { rule_key: string }>(2, (db, entityId, operation) =>
  db.selectFrom('entity_prohibitions').select('rule_key').where('entity_id', '=', entityId).where('operation', '=', operation).limit(1),
);

export class VaultRulesEngine implements RulesEngine {
  constructor(
    readonly service: RuleService,
    readonly alerts: AlertService,
    readonly logger: Logger,
    /** Where a legal hold a rule puts or lifts is recorded (`CHANGE`), in the evaluating transaction. */
    readonly activity: ActivityLog,
  ) {}

  async evaluateData(ctx: DataRuleContext): Promise<RuleEffects> {
    const set = await this.service.ruleSet(ctx.trx, ctx.rulesVersion);
    if (set.data.length === 0 || ctx.points.length === 0) return { afterCommit: [] };
    const alerts: Alert[] = [];
    const changes = newChanges();
    const idle = new Map<string, number>();
    // Built once for every rule: `{ ...base, point }` per rule and point took V8's slow path
    // for a literal that opens with a spread (bench/spread.mjs), a microsecond each.
    const request = ctx.requestPoints ?? ctx.points;
    const subjects = ctx.points.map((point): Subject & { point: CandidatePoint } => ({ points: request, entity: ctx.entity, location: ctx.location, eventType: ctx.eventType, point }));

    for (const rule of set.data) {
      const hits: CandidatePoint[] = [];
      for (const subject of subjects) if (matches(rule.constraint, subject)) hits.push(subject.point);
      if (hits.length === 0) continue;
      const action = rule.action;
      switch (action.type) {
        case 'tag':
          for (const p of hits) {
            if (action.status) p.tags.add(action.tag);
            else p.tags.delete(action.tag);
          }
          break;
        case 'regulation':
          for (const p of hits) p.regulations.add(action.regulation);
          break;
        case 'alert':
          for (const p of hits) alerts.push(this.alertFor(rule, ctx.entity.id, p, ctx.eventType));
          break;
        case 'block': {
          // Audit events are refused with the interface's text, whatever the block says.
          const message = ctx.reportOnly ? DEFAULT_BLOCK_MESSAGE : (action.message ?? DEFAULT_BLOCK_MESSAGE);
          const raised = [...(ctx.raised ?? []), ...alerts];
          // A refused store leaves no point behind for its alerts to name.
          this.alerts.recordDetached(ctx.reportOnly ? raised : raised.map(({ dataPointId: _none, ...alert }) => alert));
          throw forbidden(message);
        }
        case 'retention':
          for (const p of hits) this.applyRetention(p, action, idle);
          break;
        default:
          this.applyToEntity(rule, ctx.entity, changes);
      }
    }

    await this.writeEntityChanges(ctx.trx, ctx.caller, ctx.entity, changes);
    if (idle.size > 0 && !ctx.reportOnly) await this.recordIdleRetention(ctx.trx, ctx.entity.id, idle);
    ctx.raised?.push(...alerts);
    return this.finish(ctx.trx, alerts);
  }

  async evaluateActivity(ctx: ActivityRuleContext): Promise<RuleEffects> {
    const set = await this.service.ruleSet(ctx.trx);
    const event = ctx.event;
    if (set.activity.length === 0) return { afterCommit: [] };
    const subject: Subject = {
      points: [],
      entity: ctx.entity,
      location: event.location,
      eventType: event.eventType,
      attribute: event.attribute,
      applicationId: event.applicationId,
    };
    const alerts: Alert[] = [];
    const changes = newChanges();
    const entity = ctx.entity;
    for (const rule of set.activity) {
      if (!matches(rule.constraint, subject)) continue;
      const action = rule.action;
      switch (action.type) {
        case 'alert':
          alerts.push(
            this.alerts.create({
              ruleKey: rule.key,
              level: action.level,
              message: action.message || `Rule ${rule.key} matched`,
              ...(event.subjectId !== undefined ? { entityId: event.subjectId } : {}),
              ...(event.attribute !== undefined ? { attribute: event.attribute } : {}),
              ...(event.dataPointId !== undefined ? { dataPointId: event.dataPointId } : {}),
              eventType: event.eventType,
            }),
          );
          break;
        case 'block':
          this.alerts.recordDetached([...(ctx.raised ?? []), ...alerts]);
          throw forbidden(DEFAULT_BLOCK_MESSAGE);
        case 'tag':
          if (ctx.tagPoint) ctx.tagPoint(action.tag, action.status);
          else if (event.dataPointId !== undefined) await this.tagPoint(ctx.trx, event.dataPointId, action.tag, action.status);
          break;
        case 'regulation':
        case 'retention':
          // Refused when the rule is saved: an event has no stored point of its own to change.
          break;
        default:
          if (entity) this.applyToEntity(rule, entity, changes);
      }
    }
    if (entity) await this.writeEntityChanges(ctx.trx, ctx.caller, entity, changes);
    ctx.raised?.push(...alerts);
    return this.finish(ctx.trx, alerts);
  }

  async checkProhibited(trx: Kysely<Database>, entityId: string, operation: EventType): Promise<void> {
    const [row] = await prohibition(trx, entityId, operation);
    if (row) throw forbidden(PROHIBITED_MESSAGE);
  }

  findReferencingRule(trx: Kysely<Database>, kind: ReferenceKind, name: string): Promise<string | undefined> {
    return this.service.findReferencingRule(trx, kind, name);
  }

  private alertFor(rule: StoredRule, entityId: string, point: CandidatePoint, eventType: EventType): Alert {
    const action = rule.action as Extract<StoredRule['action'], { type: 'alert' }>;
    return this.alerts.create({
      ruleKey: rule.key,
      level: action.level,
      message: action.message || `Rule ${rule.key} matched`,
      entityId,
      attribute: point.attribute,
      ...(point.dataPointId !== undefined ? { dataPointId: point.dataPointId } : {}),
      eventType,
    });
  }

  private async finish(trx: Kysely<Database>, alerts: Alert[]): Promise<RuleEffects> {
    if (alerts.length === 0) return { afterCommit: [] };
    await this.alerts.record(trx, alerts);
    return { afterCommit: [() => this.alerts.publish(alerts)] };
  }

  /** The earliest expiry wins; `autoDelete` is the point's, whichever rule set it. */
  private applyRetention(point: CandidatePoint, action: Extract<StoredRule['action'], { type: 'retention' }>, idle: Map<string, number>): void {
    const now = Date.now();
    const bounds: number[] = [];
    if (action.expirationDate !== undefined) bounds.push(Date.parse(action.expirationDate));
    if (action.daysSinceStore !== undefined) bounds.push(now + action.daysSinceStore * DAY_MS);
    if (point.expiresAt !== undefined) bounds.push(Date.parse(point.expiresAt));
    if (bounds.length > 0) point.expiresAt = new Date(Math.min(...bounds)).toISOString();
    if (action.autoDelete) point.autoDelete = true;
    if (action.daysSinceRead !== undefined && action.autoDelete) {
      const known = idle.get(point.attribute);
      idle.set(point.attribute, known === undefined ? action.daysSinceRead : Math.min(known, action.daysSinceRead));
    }
  }

  private applyToEntity(rule: StoredRule, entity: RuleEntity, changes: EntityChanges): void {
    const action = rule.action;
    switch (action.type) {
      case 'entityTag':
        if (action.status) entity.tags.add(action.tag);
        else entity.tags.delete(action.tag);
        changes.tags = true;
        break;
      case 'legalHold':
        if (!changes.legalHold) changes.heldBefore = entity.legalHold;
        entity.legalHold = action.status;
        changes.legalHold = true;
        changes.holdRule = rule.key;
        break;
      case 'prohibition':
        for (const op of action.prohibitions) changes.prohibitions.set(op, { status: action.status, ruleKey: rule.key });
        break;
      default:
        break;
    }
  }

  /**
   * Writes what the rules changed on the entity. The caller's `entity` object is updated
   * too, so a caller that writes the entity after evaluating sees the rules' changes.
   */
  private async writeEntityChanges(trx: Kysely<Database>, actor: ChangeActor, entity: RuleEntity, changes: EntityChanges): Promise<void> {
    const now = nowIso();
    if (changes.legalHold && entity.legalHold !== changes.heldBefore) {
      const change = { target: 'entity' as const, id: entity.id, action: 'update' as const, fields: { legalHold: entity.legalHold }, rule: changes.holdRule! };
      await recordChange(this.activity, trx, { applicationId: actor.applicationId }, change, now);
    }
    if (changes.tags) await setEntityTags(trx, entity.id, [...entity.tags].sort());
    // The row is updated for any change, a prohibition too: a store waiting on its lock
    // through another process tells by the row's new version that it must read again
    // (`findStoreContext`).
    if (changes.tags || changes.legalHold || changes.prohibitions.size > 0) {
      await trx
        .updateTable('entities')
        .set({ ...(changes.legalHold ? { legal_hold: entity.legalHold ? (1 as const) : (0 as const) } : {}), updated_date: now })
        .where('id', '=', entity.id)
        .execute();
    }
    for (const [operation, { status, ruleKey }] of changes.prohibitions) {
      if (status) {
        await trx
          .insertInto('entity_prohibitions')
          .values({ entity_id: entity.id, operation, rule_key: ruleKey, created_date: now })
          .onConflict((oc) => oc.columns(['entity_id', 'operation']).doNothing())
          .execute();
      } else {
        await trx.deleteFrom('entity_prohibitions').where('entity_id', '=', entity.id).where('operation', '=', operation).execute();
      }
    }
    const holdLifted = changes.legalHold && changes.heldBefore && !entity.legalHold;
    if (holdLifted || changes.prohibitions.get('DELETE')?.status === false) await recheckIdleRetention(trx, entity.id);
  }

  /** Activity tag actions tag (or untag) the point the event is about, if the vault knows it. */
  private async tagPoint(trx: Kysely<Database>, dataPointId: string, tag: string, status: boolean): Promise<void> {
    if (!status) {
      await holdTagsAgainstDelete(trx);
      await trx.deleteFrom('datapoint_tags').where('datapoint_id', '=', dataPointId).where('tag', '=', tag).execute();
      return;
    }
    const point = await trx.selectFrom('datapoints').select('id').where('id', '=', dataPointId).executeTakeFirst();
    if (!point) return;
    await ensureTags(trx, [tag]);
    await trx
      .insertInto('datapoint_tags')
      .values({ datapoint_id: dataPointId, tag })
      .onConflict((oc) => oc.columns(['datapoint_id', 'tag']).doNothing())
      .execute();
  }

  private async recordIdleRetention(trx: Kysely<Database>, entityId: string, idle: Map<string, number>): Promise<void> {
    for (const [definitionKey, days] of idle) {
      const nextCheck = new Date(Date.now() + days * DAY_MS).toISOString();
      const existing = await trx
        .selectFrom('idle_retention')
        .selectAll()
        .where('entity_id', '=', entityId)
        .where('definition_key', '=', definitionKey)
        .executeTakeFirst();
      if (!existing) {
        await trx.insertInto('idle_retention').values({ entity_id: entityId, definition_key: definitionKey, days, next_check: nextCheck }).execute();
      } else if (days < existing.days || nextCheck < existing.next_check) {
        await trx
          .updateTable('idle_retention')
          .set({ days: Math.min(days, existing.days), next_check: nextCheck < existing.next_check ? nextCheck : existing.next_check })
          .where('entity_id', '=', entityId)
          .where('definition_key', '=', definitionKey)
          .execute();
      }
    }
  }
}
