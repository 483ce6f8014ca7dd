/**
 * Domain counters, taken where every operation already passes: the activity log (each
 * store, read, delete and audit event appends there), the rules engine, and the alerts.
 * Decorators keep the services themselves free of metrics.
 *
 * They count committed work, once: what happens inside a write's transaction is counted when
 * that transaction has committed (`afterCommit`), so a write that rolled back is not counted,
 * and one that rolled back and ran again (a shared transaction that failed, then the write
 * alone) is counted for the run that committed.
 */
import type { Kysely } from 'kysely';
import { isAuditEvent, type ActivityLog, type ActivityRecord } from '../activity/log.js';
import type { AlertService } from '../alerts/service.js';
import { afterCommit, type CommitJob } from '../db/after-commit.js';
import type { Database } from '../db/schema.js';
import { isVaultError } from '../errors.js';
import type { RuleEffects, RulesEngine } from '../rules/engine.js';
import type { SearchService } from '../search/service.js';
import type { VaultMetrics } from './metrics.js';

const OPERATION: Record<string, string> = { STORE: 'store', UPDATE: 'store', READ: 'read', DELETE: 'delete' };

export function meterActivity(log: ActivityLog, metrics: VaultMetrics): ActivityLog {
  const count: CommitJob<ActivityRecord[]> = (records) => {
    for (const record of records) {
      // An administrative change touches no data point.
      if (record.change !== undefined) continue;
      // Deleting a report-only point (by API or by retention) is a delete, not an audit event.
      if (isAuditEvent(record)) metrics.auditEvents.inc();
      // A read of several points is one record; the metric counts points.
      else metrics.dataPoints.inc({ operation: OPERATION[record.eventType] ?? 'other' }, record.points?.length ?? 1);
    }
  };
  return {
    async append(trx, records, inserts) {
      await log.append(trx, records, inserts);
      afterCommit(trx, count, records);
    },
    async record(records) {
      // Resolves once the records have committed.
      await log.record(records);
      count(records);
    },
  };
}

/**
 * An evaluation counts when its operation commits, or when it refused the operation (a
 * block): a refusal stands, and the operation does not run again.
 */
export function meterRules(engine: RulesEngine, metrics: VaultMetrics): RulesEngine {
  type Labels = { type: 'data' | 'activity' };
  const count: CommitJob<Labels> = (labels) => metrics.ruleEvaluations.inc(labels);
  const counted =
    <C extends { trx: Kysely<Database> }>(labels: Labels, evaluate: (ctx: C) => Promise<RuleEffects>) =>
    async (ctx: C): Promise<RuleEffects> => {
      try {
        const effects = await evaluate(ctx);
        afterCommit(ctx.trx, count, labels);
        return effects;
      } catch (err) {
        if (isVaultError(err)) count(labels);
        throw err;
      }
    };
  return {
    evaluateData: counted({ type: 'data' }, (ctx) => engine.evaluateData(ctx)),
    evaluateActivity: counted({ type: 'activity' }, (ctx) => engine.evaluateActivity(ctx)),
    checkProhibited: (trx, entityId, operation) => engine.checkProhibited(trx, entityId, operation),
    findReferencingRule: (trx, kind, name) => engine.findReferencingRule(trx, kind, name),
  };
}

/** Alerts are counted when published, that is once their operation has committed. */
export function meterAlerts(alerts: AlertService, metrics: VaultMetrics): void {
  const publish = alerts.publish.bind(alerts);
  alerts.publish = (list) => {
    for (const alert of list) metrics.alerts.inc({ level: alert.level });
    publish(list);
  };
}

export function meterSearches(search: SearchService, metrics: VaultMetrics): void {
  const run = search.search.bind(search);
  search.search = (caller, request) => {
    metrics.searches.inc();
    return run(caller, request);
  };
}
