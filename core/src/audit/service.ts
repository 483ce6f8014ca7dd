/**
 * Report-only audit events: activity on data that lives in other systems. Each event is
 * checked, run past the rules, reflected on a report-only data point (no value is ever
 * kept) and appended to the activity log. Parsing is in events.ts, what each event does to
 * the points in plan.ts and points.ts, one transaction's run in batch.ts.
 */
import type { Logger } from 'pino';
import type { Caller } from '../access/caller.js';
import type { ActivityLog } from '../activity/log.js';
import { isSerializationFailure, isUniqueViolation } from '../db/dialect.js';
import type { WriteGroup } from '../db/write-group.js';
import { BUSY_MESSAGE, VaultError } from '../errors.js';
import { runAfterCommit, type RuleEffects, type RulesEngine } from '../rules/engine.js';
import { AuditBatch } from './batch.js';
import type { ActivitySummary, AuditEventInput, AuditMode } from './events.js';

const MAX_ATTEMPTS = 4;

export interface AuditServiceOptions {
  /** Each request's transaction (on SQLite, requests arriving together share a commit). */
  writes: WriteGroup;
  /** Read per request: the engine (and the activity log) may be replaced after start. */
  rules: () => RulesEngine;
  activity: () => ActivityLog;
  logger: Logger;
}

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return isUniqueViolation(err) || isSerializationFailure(err) || code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT';
}

export class AuditService {
  constructor(private readonly options: AuditServiceOptions) {}

  /**
   * Records one event (`single`) or a bulk. Concurrent requests that race on the same event
   * id or data point id (two reports registering one unseen point, say) lose to a unique
   * constraint; the loser runs again and then sees the winner's work (the point is known,
   * the repeated event id is answered from the log).
   */
  async record(caller: Caller, events: AuditEventInput[], mode: AuditMode): Promise<ActivitySummary[]> {
    const { writes, logger } = this.options;
    for (let attempt = 1; ; attempt++) {
      try {
        let effects: RuleEffects[] = [];
        const use = { rules: this.options.rules(), activity: this.options.activity() };
        const summaries = await writes.transaction(async (trx) => {
          const batch = new AuditBatch(trx, use, caller, events, mode);
          const result = await batch.run();
          effects = batch.effects;
          return result;
        });
        runAfterCommit(effects, (err) => logger.error({ err }, 'a rule effect of an audit event failed'));
        return summaries;
      } catch (err) {
        if (!isRetryable(err)) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          logger.warn({ code: (err as { code?: string }).code }, 'audit request kept conflicting with concurrent writes');
          throw new VaultError(503, BUSY_MESSAGE);
        }
      }
    }
  }
}
