/**
 * How much the vault holds, for the console's overview: one cheap count per concept, never a
 * value or an id. What a caller may not see elsewhere it does not see counted here either.
 */
import { sql, type Kysely } from 'kysely';
import type { Caller } from '../access/caller.js';
import type { Database } from '../db/schema.js';
import { DATASUBJECT } from '../entitytypes/service.js';
import { ALERT_LEVELS } from '../rules/model.js';

export interface VaultStats {
  /** Entities of type `datasubject`. */
  subjects: number;
  /** Whole values (a structure counts once, not per leaf) of the attributes the caller may access. */
  dataPoints: number;
  definitions: number;
  rules: number;
  /** Admins only (null otherwise), as `GET /applications` is. */
  applications: number | null;
  /** Alerts raised in the 24 hours before `asOf`, by level; admins only (null otherwise), as `GET /alerts` is. */
  alertsLast24Hours: Record<string, number> | null;
  asOf: string;
}

export class StatsService {
  constructor(private readonly db: Kysely<Database>) {}

  async summary(caller: Caller, now = new Date()): Promise<VaultStats> {
    const count = sql<number | string>`count(*)`.as('n');
    const num = (row: { n: number | string } | undefined) => Number(row?.n ?? 0);
    let points = this.db.selectFrom('datapoints').select(count).where('structure_root_id', 'is', null);
    if (caller.attributes !== '*') {
      const allowed = [...caller.attributes];
      if (allowed.length === 0) points = points.where(sql<boolean>`1 = 0`);
      else points = points.where('definition_key', 'in', allowed);
    }
    const [subjects, dataPoints, definitions, rules] = await Promise.all([
      this.db.selectFrom('entities').select(count).where('type', '=', DATASUBJECT).executeTakeFirst().then(num),
      points.executeTakeFirst().then(num),
      this.db.selectFrom('attribute_definitions').select(count).executeTakeFirst().then(num),
      this.db.selectFrom('rules').select(count).executeTakeFirst().then(num),
    ]);
    let applications: number | null = null;
    let alertsLast24Hours: Record<string, number> | null = null;
    if (caller.admin) {
      applications = await this.db.selectFrom('applications').select(count).executeTakeFirst().then(num);
      const since = new Date(now.getTime() - 24 * 3600_000).toISOString();
      const rows = await this.db
        .selectFrom('alerts')
        .select(['level', count])
        .where('created_date', '>=', since)
        .groupBy('level')
        .execute();
      alertsLast24Hours = Object.fromEntries(ALERT_LEVELS.map((level) => [level, 0]));
      for (const row of rows) alertsLast24Hours[row.level] = num(row);
    }
    return { subjects, dataPoints, definitions, rules, applications, alertsLast24Hours, asOf: now.toISOString() };
  }
}
