import type { Kysely } from 'kysely';

/**
 * A read that answers several points becomes one activity record that names them all, rather
 * than one record per point. A subject read of twenty points wrote twenty rows, each with its
 * three index entries, its share of the commit and its own link of the chain: more than half
 * of what the read cost. `GET /activity` still lists one entry per point (see
 * `activity/service.ts`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['activity_log', 'activity_pending']) {
    await db.schema.alterTable(table).addColumn('points', 'text').execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('the activity log migration is not reversible');
}
