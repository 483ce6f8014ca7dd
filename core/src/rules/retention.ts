/**
 * The retention sweep: deletes data points whose rule-set retention has run out and that
 * rules marked `autoDelete` (with their sub-points), and records each delete in the
 * activity log as application `retention`. Points of an entity under legal hold, or whose
 * deletion a rule has prohibited, are kept: a hold exists precisely to stop deletion.
 *
 * Two kinds of expiry: a fixed one (`expires_at`, from `expirationDate` or
 * `daysSinceStore`), and "days since read", measured from the later of the point's last
 * modification and its last READ in the activity log.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { ActivityLog, ActivityRecord } from '../activity/log.js';
import { ActivityService } from '../activity/service.js';
import { ConfigError } from '../config.js';
import { deleteStructures } from '../datapoints/plane.js';
import { committed } from '../db/after-commit.js';
import type { Database } from '../db/schema.js';

export const DEFAULT_SWEEP_MS = 60_000;
const BATCH = 500;
const DAY_MS = 86_400_000;
/** An entity on hold is looked at again a day later rather than on every sweep. */
const HELD_RECHECK_MS = DAY_MS;
export const RETENTION_APPLICATION = 'retention';

/** `VAULT_RETENTION_SWEEP_MS`: milliseconds between sweeps; 0 turns the sweep off. */
export function sweepIntervalFromEnv(env: Record<string, string | undefined>): number {
  const raw = env.VAULT_RETENTION_SWEEP_MS;
  if (raw === undefined || raw === '') return DEFAULT_SWEEP_MS;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 86_400_000) {
    throw new ConfigError(`VAULT_RETENTION_SWEEP_MS must be an integer from 0 to 86400000, got "${raw}"`);
  }
  return value;
}

interface PointRow {
  id: string;
  entity_id: string;
  attribute: string;
  report_only: 0 | 1;
}

export class RetentionSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly activity: () => ActivityLog,
    private readonly logger: Logger,
    readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.intervalMs === 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      void this.sweep().catch((err: unknown) => this.logger.error({ err }, 'retention sweep failed'));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One full sweep; returns how many root points it deleted. Concurrent calls share one run. */
  sweep(now: Date = new Date()): Promise<number> {
    this.running ??= this.run(now).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async run(now: Date): Promise<number> {
    const deleted = (await this.sweepFixed(now)) + (await this.sweepIdle(now));
    if (deleted > 0) this.logger.info({ deleted }, 'retention sweep deleted expired data points');
    return deleted;
  }

  /** Entities whose data must stay: under legal hold, or with DELETE prohibited by a rule. */
  private async protectedEntities(db: Kysely<Database>, entityIds: string[]): Promise<Set<string>> {
    const ids = [...new Set(entityIds)];
    if (ids.length === 0) return new Set();
    const [held, prohibited] = await Promise.all([
      db.selectFrom('entities').select('id').where('id', 'in', ids).where('legal_hold', '=', 1).execute(),
      db.selectFrom('entity_prohibitions').select('entity_id').where('entity_id', 'in', ids).where('operation', '=', 'DELETE').execute(),
    ]);
    return new Set([...held.map((r) => r.id), ...prohibited.map((r) => r.entity_id)]);
  }

  private async remove(trx: Kysely<Database>, points: PointRow[], now: string): Promise<void> {
    if (points.length === 0) return;
    await deleteStructures(
      trx,
      points.map((p) => p.id),
    );
    const records: ActivityRecord[] = points.map((p) => ({
      eventType: 'DELETE',
      subjectId: p.entity_id,
      dataPointId: p.id,
      attribute: p.attribute,
      applicationId: RETENTION_APPLICATION,
      reportOnly: p.report_only === 1,
      timestamp: now,
    }));
    // Last write of the transaction, as the activity log asks.
    await this.activity().append(trx, records);
  }

  private async sweepFixed(now: Date): Promise<number> {
    const nowIso = now.toISOString();
    let deleted = 0;
    // Held points stay expired; paging past them (by id) keeps them from filling every batch.
    let after = '';
    for (;;) {
      const batch = await this.db
        .selectFrom('datapoints')
        .select(['id', 'entity_id', 'attribute', 'report_only'])
        .where('auto_delete', '=', 1)
        .where('expires_at', '<=', nowIso)
        .where('structure_root_id', 'is', null)
        .where('id', '>', after)
        .orderBy('id')
        .limit(BATCH)
        .execute();
      if (batch.length === 0) break;
      after = batch[batch.length - 1].id;
      const removed = await committed(this.db, async (trx) => {
        const kept = await this.protectedEntities(trx, batch.map((p) => p.entity_id));
        const doomed = batch.filter((p) => !kept.has(p.entity_id));
        await this.remove(trx, doomed, nowIso);
        return doomed.length;
      });
      deleted += removed;
      if (batch.length < BATCH) break;
    }
    return deleted;
  }

  private async sweepIdle(now: Date): Promise<number> {
    const nowIso = now.toISOString();
    const nowMs = now.getTime();
    let deleted = 0;
    for (;;) {
      const due = await this.db.selectFrom('idle_retention').selectAll().where('next_check', '<=', nowIso).orderBy('next_check').limit(BATCH).execute();
      if (due.length === 0) break;
      for (const policy of due) {
        deleted += await committed(this.db, async (trx) => {
          const points = await trx
            .selectFrom('datapoints')
            .select(['id', 'entity_id', 'attribute', 'report_only', 'modified_date'])
            .where('entity_id', '=', policy.entity_id)
            .where('definition_key', '=', policy.definition_key)
            .where('auto_delete', '=', 1)
            .where('structure_root_id', 'is', null)
            .execute();
          if (points.length === 0) {
            await trx.deleteFrom('idle_retention').where('entity_id', '=', policy.entity_id)
              .where('definition_key', '=', policy.definition_key).execute();
            return 0;
          }
          if ((await this.protectedEntities(trx, [policy.entity_id])).size > 0) {
            await trx
              .updateTable('idle_retention')
              .set({ next_check: new Date(nowMs + HELD_RECHECK_MS).toISOString() })
              .where('entity_id', '=', policy.entity_id)
              .where('definition_key', '=', policy.definition_key)
              .execute();
            return 0;
          }
          const doomed: PointRow[] = [];
          let nextCheck = Infinity;
          for (const point of points) {
            const lastRead = (await ActivityService.lastRead(trx, point.entity_id, point.id)) ?? '';
            const anchor = Math.max(Date.parse(point.modified_date), lastRead ? Date.parse(lastRead) : 0);
            const expiry = anchor + policy.days * DAY_MS;
            if (expiry <= nowMs) doomed.push(point);
            else nextCheck = Math.min(nextCheck, expiry);
          }
          if (nextCheck === Infinity) await trx.deleteFrom('idle_retention').where('entity_id', '=', policy.entity_id)
              .where('definition_key', '=', policy.definition_key).execute();
          else await trx.updateTable('idle_retention').set({ next_check: new Date(nextCheck).toISOString() }).where('entity_id', '=', policy.entity_id)
              .where('definition_key', '=', policy.definition_key).execute();
          await this.remove(trx, doomed, nowIso);
          return doomed.length;
        });
      }
      if (due.length < BATCH) break;
    }
    return deleted;
  }
}
