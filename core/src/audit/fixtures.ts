/** Test helpers shared by the audit and activity suites. */
import { randomBytes } from 'node:crypto';
import type { TestVault } from '../testing/harness.js';
import type { RulesEngine } from '../rules/engine.js';
import { forbidden } from '../errors.js';
import { toNumber } from '../db/dialect.js';
import { sql } from 'kysely';

/** The triggers keep honest code from editing the log; a tamperer with the database drops them. */
export async function dropActivityGuards(target: TestVault): Promise<void> {
  if (target.vault.dialect === 'postgres') {
    await sql`drop trigger activity_log_no_update on activity_log`.execute(target.vault.db);
  } else {
    await sql`drop trigger activity_log_no_update`.execute(target.vault.db);
    await sql`drop trigger activity_log_no_delete`.execute(target.vault.db);
  }
}

/** A name no other test of the run uses. */
export function unique(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

export async function defineAttribute(v: TestVault, key: string, schema: unknown = 'string', extra: Record<string, unknown> = {}): Promise<void> {
  const res = await v.request('POST', '/attributes', { body: { key, schema, ...extra } });
  if (res.status !== 201 && res.status !== 200) throw new Error(`could not define ${key}: ${JSON.stringify(res.body)}`);
}

/** Every record, sealed or still waiting for the sealer (PostgreSQL under concurrency). */
export async function activityCount(v: TestVault): Promise<number> {
  // One snapshot: the sealer moves records from one table to the other.
  const snapshot = v.vault.dialect === 'postgres' ? v.vault.db.transaction().setIsolationLevel('repeatable read') : v.vault.db.transaction();
  return snapshot.execute(async (trx) => {
    let n = 0;
    for (const table of ['activity_log', 'activity_pending'] as const) {
      const row = await trx.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
      n += toNumber(row.n);
    }
    return n;
  });
}

export async function pointCount(v: TestVault): Promise<number> {
  const row = await v.vault.db.selectFrom('datapoints').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  return toNumber(row.n);
}

/** An event's records once sealed. */
export async function recordsOf(v: TestVault, eventId: string) {
  await v.vault.sealer.sealAll();
  return v.vault.db.selectFrom('activity_log').selectAll().where('event_id', '=', eventId).execute();
}

/**
 * A stand-in for the rules engine: blocks data whose value is `BLOCK ME` (with its own
 * message, which the audit endpoints must replace) and activity of the application
 * `blocked-app`, and remembers what it was shown.
 */
export function stubRules(seen: { data: unknown[]; activity: unknown[] }): RulesEngine {
  return {
    async evaluateData(ctx) {
      seen.data.push({ eventType: ctx.eventType, reportOnly: ctx.reportOnly, points: ctx.points.map((p) => ({ attribute: p.attribute, value: p.value })) });
      if (ctx.points.some((p) => p.value === 'BLOCK ME')) throw forbidden('custom block message');
      for (const p of ctx.points) if (p.value === 'TAG ME') p.tags.add('tagged_by_rule');
      return { afterCommit: [] };
    },
    async evaluateActivity(ctx) {
      seen.activity.push(ctx.event);
      if (ctx.event.applicationId === 'blocked-app') throw forbidden('The provided data could not be stored, as a rule disallows it');
      return { afterCommit: [] };
    },
    async checkProhibited() {},
    async findReferencingRule() {
      return undefined;
    },
  };
}
