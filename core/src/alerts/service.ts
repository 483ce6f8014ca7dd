/**
 * Alerts raised by rules: recorded, logged and delivered to the operator's webhooks. An
 * alert names the rule, the entity, the attribute and the data point, never a value.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { newOrderedId } from '../datapoints/ids.js';
import type { Database } from '../db/schema.js';
import { badRequest } from '../errors.js';
import { ALERT_LEVELS } from '../rules/model.js';
import type { AlertsTable } from '../rules/tables.js';
import { nowIso, parseIsoDate } from '../util/time.js';
import type { WebhookDelivery } from './webhooks.js';

export interface Alert {
  id: string;
  ruleKey: string;
  level: string;
  message: string;
  entityId?: string;
  attribute?: string;
  dataPointId?: string;
  eventType: string;
  createdDate: string;
}

export type NewAlert = Omit<Alert, 'id' | 'createdDate'>;

export interface AlertQuery {
  rule?: string;
  level?: string;
  from?: string;
  to?: string;
  page?: number;
  count?: number;
}

const INSERT_CHUNK = 500;

function toAlert(row: AlertsTable): Alert {
  return {
    id: row.id,
    ruleKey: row.rule_key,
    level: row.level,
    message: row.message,
    ...(row.entity_id !== null ? { entityId: row.entity_id } : {}),
    ...(row.attribute !== null ? { attribute: row.attribute } : {}),
    ...(row.datapoint_id !== null ? { dataPointId: row.datapoint_id } : {}),
    eventType: row.event_type,
    createdDate: row.created_date,
  };
}

export class AlertService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
    readonly webhooks: WebhookDelivery,
  ) {}

  create(input: NewAlert): Alert {
    // Time-ordered ids: alerts one store raised share a millisecond, and are listed by
    // `created_date` then id, which is then the order the rules raised them in.
    return { id: newOrderedId(), createdDate: nowIso(), ...input };
  }

  /** Inserts through the caller's transaction: the alerts commit or roll back with the store. */
  async record(db: Kysely<Database>, alerts: Alert[]): Promise<void> {
    for (let i = 0; i < alerts.length; i += INSERT_CHUNK) {
      await db
        .insertInto('alerts')
        .values(
          alerts.slice(i, i + INSERT_CHUNK).map((a) => ({
            id: a.id,
            rule_key: a.ruleKey,
            level: a.level,
            message: a.message,
            entity_id: a.entityId ?? null,
            attribute: a.attribute ?? null,
            datapoint_id: a.dataPointId ?? null,
            event_type: a.eventType,
            created_date: a.createdDate,
          })),
        )
        .execute();
    }
  }

  /** Logs and starts delivery; returns at once. Call after the alerts' transaction committed. */
  publish(alerts: Alert[]): void {
    for (const alert of alerts) {
      // Entity ids are caller-chosen and may themselves be personal data: the log names the
      // rule, the attribute and the point, and the alert id leads to the rest. `level` is
      // pino's own: a second one made the line carry two, and filtering by level broke.
      const line = { alertId: alert.id, ruleKey: alert.ruleKey, alertLevel: alert.level, eventType: alert.eventType, attribute: alert.attribute, dataPointId: alert.dataPointId };
      if (alert.level === 'DANGER' || alert.level === 'WARNING') this.logger.warn(line, `rule alert: ${alert.message}`);
      else this.logger.info(line, `rule alert: ${alert.message}`);
      this.webhooks.send(alert.id, alert);
    }
  }

  /**
   * For alerts of an operation that a later rule blocked: the operation's transaction rolls
   * back, so they are recorded on their own once it has (on SQLite the insert waits for the
   * connection the transaction holds), then published.
   */
  recordDetached(alerts: Alert[]): void {
    if (alerts.length === 0) return;
    setImmediate(() => {
      this.record(this.db, alerts)
        .then(() => this.publish(alerts))
        .catch((err: unknown) => this.logger.error({ err }, 'alerts of a blocked operation could not be recorded'));
    });
  }

  async list(query: AlertQuery): Promise<Alert[]> {
    const page = query.page ?? 0;
    const count = query.count ?? 100;
    if (!Number.isSafeInteger(page) || page < 0) throw badRequest('page must be a whole number from 0');
    if (!Number.isSafeInteger(count) || count < 1 || count > 1000) throw badRequest('count must be from 1 to 1000');
    let q = this.db.selectFrom('alerts').selectAll();
    if (query.rule !== undefined) q = q.where('rule_key', '=', query.rule);
    if (query.level !== undefined) {
      // A misspelt level would otherwise answer an empty list, as if nothing had been raised.
      const level = query.level.toUpperCase();
      if (!(ALERT_LEVELS as readonly string[]).includes(level)) throw badRequest(`level must be one of ${ALERT_LEVELS.join(', ')}`);
      q = q.where('level', '=', level);
    }
    if (query.from !== undefined) {
      const from = parseIsoDate(query.from);
      if (!from) throw badRequest('from must be an ISO 8601 date');
      q = q.where('created_date', '>=', from);
    }
    if (query.to !== undefined) {
      const to = parseIsoDate(query.to);
      if (!to) throw badRequest('to must be an ISO 8601 date');
      q = q.where('created_date', '<=', to);
    }
    const rows = await q
      .orderBy('created_date')
      .orderBy('id')
      .limit(count)
      .offset(page * count)
      .execute();
    return rows.map(toAlert);
  }
}
