/**
 * Domain counters, taken where every operation already passes: the activity log (each
 * store, read, delete and audit event appends there), the rules engine, and the alerts.
 * Decorators keep the services themselves free of metrics.
 */
import type { ActivityLog, ActivityRecord } from '../activity/log.js';
import type { AlertService } from '../alerts/service.js';
import type { RulesEngine } from '../rules/engine.js';
import type { SearchService } from '../search/service.js';
import type { VaultMetrics } from './metrics.js';

const OPERATION: Record<string, string> = { STORE: 'store', UPDATE: 'store', READ: 'read', DELETE: 'delete' };

export function meterActivity(log: ActivityLog, metrics: VaultMetrics): ActivityLog {
  const count = (records: ActivityRecord[]) => {
    for (const record of records) {
      if (record.reportOnly) metrics.auditEvents.inc();
      // A read of several points is one record; the metric counts points.
      else metrics.dataPoints.inc({ operation: OPERATION[record.eventType] ?? 'other' }, record.points?.length ?? 1);
    }
  };
  return {
    async append(trx, records, inserts) {
      await log.append(trx, records, inserts);
      count(records);
    },
    async record(records) {
      await log.record(records);
      count(records);
    },
  };
}

export function meterRules(engine: RulesEngine, metrics: VaultMetrics): RulesEngine {
  return {
    evaluateData: (ctx) => {
      metrics.ruleEvaluations.inc({ type: 'data' });
      return engine.evaluateData(ctx);
    },
    evaluateActivity: (ctx) => {
      metrics.ruleEvaluations.inc({ type: 'activity' });
      return engine.evaluateActivity(ctx);
    },
    checkProhibited: (trx, entityId, operation) => engine.checkProhibited(trx, entityId, operation),
    findReferencingRule: (kind, name) => engine.findReferencingRule(kind, name),
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
