/**
 * The retention sweep: deletes data points whose rule-set retention has run out and that
 * rules marked `autoDelete` (with their sub-points), and records each delete in the
 * activity log as application `retention`. Points of an entity under legal hold, or whose
 * deletion a rule has prohibited, are kept: a hold exists precisely to stop deletion.
 *
 * Two kinds of expiry: a fixed one (`expires_at`, from `expirationDate` or
 * `daysSinceStore`), and "days since read", measured from the later of the point's last
 * modification and its last READ in the activity log.
 *
 * Every process sweeps, and stores, overwrites and holds land between a sweep's steps. So
 * each transaction reads its points again, locked, and deletes only those still expired;
 * and reads their entities' hold locked, so a hold either waits for the delete or stops it.
 * On PostgreSQL rows another transaction holds are skipped, not waited for: two sweeps
 * split the expired points between them, and a point being written waits for the next
 * sweep. SQLite runs one write transaction at a time, so the reads inside it settle it.
 */
import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { Logger } from 'pino';
import type { ActivityLog, ActivityRecord } from '../activity/log.js';
import { ActivityService } from '../activity/service.js';
import { deleteStructures } from '../datapoints/plane.js';
import { committed } from '../db/after-commit.js';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { nowIso } from '../util/time.js';
import type { IdleRetentionTable } from './tables.js';

const BATCH = 500;
const DAY_MS = 86_400_000;
/** An entity on hold is looked at again a day later rather than on every sweep. */
const HELD_RECHECK_MS = DAY_MS;
export const RETENTION_APPLICATION = 'retention';

interface PointRow {
  id: string;
  entity_id: string;
  attribute: string;
  report_only: 0 | 1;
}

/** Where a sweep can be paused, for a test to land another process's write there. */
export type SweepStage = 'selected' | 'checked';

/** On PostgreSQL, locks the rows read until the transaction ends, passing over rows another transaction holds. */
function lockingOrSkipping<TB extends keyof Database, O>(
  trx: Kysely<Database>,
  query: SelectQueryBuilder<Database, TB, O>,
  mode: 'update' | 'share',
): SelectQueryBuilder<Database, TB, O> {
  if (dialectOf(trx) !== 'postgres') return query;
  return (mode === 'update' ? query.forUpdate() : query.forShare()).skipLocked();
}

export class RetentionSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  /**
   * Tests only: awaited at `selected` (a batch of expired points has been read, its
   * transaction not begun) and at `checked` (inside it: the points and their entities are
   * locked and checked, nothing deleted yet), to stage another process's write there.
   */
  interleave: ((stage: SweepStage) => Promise<void>) | undefined;

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

  /**
   * Which of `entityIds` may lose points now (`free`) and which must keep them (`held`: under
   * legal hold or with DELETE prohibited). Each is read with a share lock kept to the commit:
   * a hold set after this read waits for the sweep's delete, and one set before it is seen.
   * On PostgreSQL an entity another transaction is writing (a hold, a store) is in neither:
   * its points wait for the next sweep rather than the sweep for it.
   */
  private async checkEntities(trx: Kysely<Database>, entityIds: string[]): Promise<{ free: Set<string>; held: Set<string> }> {
    const ids = [...new Set(entityIds)];
    if (ids.length === 0) return { free: new Set(), held: new Set() };
    const rows = await lockingOrSkipping(trx, trx.selectFrom('entities').select(['id', 'legal_hold']).where('id', 'in', ids), 'share').execute();
    const prohibited = await trx.selectFrom('entity_prohibitions').select('entity_id').where('entity_id', 'in', ids).where('operation', '=', 'DELETE').execute();
    const held = new Set([...rows.filter((r) => r.legal_hold === 1).map((r) => r.id), ...prohibited.map((r) => r.entity_id)]);
    return { free: new Set(rows.map((r) => r.id).filter((id) => !held.has(id))), held };
  }

  /** Deletes `points` (locked by the caller, so each is deleted here) with one DELETE record each. */
  private async remove(trx: Kysely<Database>, points: PointRow[]): Promise<void> {
    if (points.length === 0) return;
    await deleteStructures(trx, points.map((p) => p.id));
    // The moment of the delete, not the sweep's start: a write the sweep came after is older.
    const timestamp = nowIso();
    const records: ActivityRecord[] = points.map((p) => ({
      eventType: 'DELETE',
      subjectId: p.entity_id,
      dataPointId: p.id,
      attribute: p.attribute,
      applicationId: RETENTION_APPLICATION,
      reportOnly: p.report_only === 1,
      timestamp,
    }));
    // Last write of the transaction, as the activity log asks.
    await this.activity().append(trx, records);
  }

  private expiredPoints(db: Kysely<Database>, asOf: string) {
    return db
      .selectFrom('datapoints')
      .select(['id', 'entity_id', 'attribute', 'report_only'])
      .where('auto_delete', '=', 1)
      .where('expires_at', '<=', asOf)
      .where('structure_root_id', 'is', null);
  }

  private async sweepFixed(now: Date): Promise<number> {
    const asOf = now.toISOString();
    let deleted = 0;
    // Held points stay expired; paging past them (by id) keeps them from filling every batch.
    let after = '';
    for (;;) {
      const batch = await this.expiredPoints(this.db, asOf).where('id', '>', after).orderBy('id').limit(BATCH).execute();
      if (batch.length === 0) break;
      after = batch[batch.length - 1].id;
      await this.interleave?.('selected');
      deleted += await committed(this.db, async (trx) => {
        // Since the batch was read, another process may have deleted a point, or overwritten
        // it (same id, fresh expiry): only what is still expired, read locked, goes.
        const ids = batch.map((p) => p.id);
        const points = await lockingOrSkipping(trx, this.expiredPoints(trx, asOf).where('id', 'in', ids), 'update').execute();
        const { free } = await this.checkEntities(trx, points.map((p) => p.entity_id));
        const doomed = points.filter((p) => free.has(p.entity_id));
        await this.interleave?.('checked');
        await this.remove(trx, doomed);
        return doomed.length;
      });
      if (batch.length < BATCH) break;
    }
    return deleted;
  }

  private async sweepIdle(now: Date): Promise<number> {
    const asOf = now.toISOString();
    let deleted = 0;
    // A policy left due (another process holds it, or its entity is being written) is paged
    // past, so this run ends; the next sweep takes it.
    let after: [string, string, string] | undefined;
    for (;;) {
      let query = this.db.selectFrom('idle_retention').selectAll().where('next_check', '<=', asOf);
      if (after) {
        const [nextCheck, entityId, definitionKey] = after;
        query = query.where(({ eb, refTuple, tuple }) => eb(refTuple('next_check', 'entity_id', 'definition_key'), '>', tuple(nextCheck, entityId, definitionKey)));
      }
      const due = await query.orderBy('next_check').orderBy('entity_id').orderBy('definition_key').limit(BATCH).execute();
      if (due.length === 0) break;
      const last = due[due.length - 1];
      after = [last.next_check, last.entity_id, last.definition_key];
      for (const policy of due) deleted += await committed(this.db, (trx) => this.sweepPolicy(trx, policy, now));
      if (due.length < BATCH) break;
    }
    return deleted;
  }

  /** One entity's points of one attribute under "days since read"; returns how many it deleted. */
  private async sweepPolicy(trx: Kysely<Database>, policy: IdleRetentionTable, now: Date): Promise<number> {
    const asOf = now.toISOString();
    const nowMs = now.getTime();
    const ofPolicy = <O>(query: SelectQueryBuilder<Database, 'idle_retention', O>) =>
      query.where('entity_id', '=', policy.entity_id).where('definition_key', '=', policy.definition_key);
    const setNextCheck = (nextCheck: string) =>
      trx.updateTable('idle_retention').set({ next_check: nextCheck }).where('entity_id', '=', policy.entity_id).where('definition_key', '=', policy.definition_key).execute();
    const dropPolicy = () => trx.deleteFrom('idle_retention').where('entity_id', '=', policy.entity_id).where('definition_key', '=', policy.definition_key).execute();

    // Read again, locked: another process's sweep may hold the policy or have moved it on.
    const current = await lockingOrSkipping(trx, ofPolicy(trx.selectFrom('idle_retention').selectAll()).where('next_check', '<=', asOf), 'update').executeTakeFirst();
    if (!current) return 0;
    const { free, held } = await this.checkEntities(trx, [policy.entity_id]);
    if (held.size > 0) {
      await setNextCheck(new Date(nowMs + HELD_RECHECK_MS).toISOString());
      return 0;
    }
    if (free.size === 0) return 0;
    const ofAttribute = trx
      .selectFrom('datapoints')
      .select(['id', 'entity_id', 'attribute', 'report_only', 'modified_date'])
      .where('entity_id', '=', policy.entity_id)
      .where('definition_key', '=', policy.definition_key)
      .where('auto_delete', '=', 1)
      .where('structure_root_id', 'is', null);
    const points = await lockingOrSkipping(trx, ofAttribute, 'update').execute();
    // A point another transaction holds (a fixed-expiry sweep, an audit update) must count
    // towards the policy's next check: leave the policy due.
    if (dialectOf(trx) === 'postgres' && (await ofAttribute.execute()).length > points.length) return 0;
    if (points.length === 0) {
      await dropPolicy();
      return 0;
    }
    const doomed: PointRow[] = [];
    let nextCheck = Infinity;
    for (const point of points) {
      const lastRead = (await ActivityService.lastRead(trx, point.entity_id, point.id)) ?? '';
      const anchor = Math.max(Date.parse(point.modified_date), lastRead ? Date.parse(lastRead) : 0);
      const expiry = anchor + current.days * DAY_MS;
      if (expiry <= nowMs) doomed.push(point);
      else nextCheck = Math.min(nextCheck, expiry);
    }
    if (nextCheck === Infinity) await dropPolicy();
    else await setNextCheck(new Date(nextCheck).toISOString());
    await this.interleave?.('checked');
    await this.remove(trx, doomed);
    return doomed.length;
  }
}
